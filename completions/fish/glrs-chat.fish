complete --keep-order --exclusive --command glrs-chat --arguments "(_GLRS_COMPLETE=fish glrs-chat -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
