complete --keep-order --exclusive --command glrs --arguments "(_GLRS_COMPLETE=fish glrs -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
