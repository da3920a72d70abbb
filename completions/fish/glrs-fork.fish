complete --keep-order --exclusive --command glrs-fork --arguments "(_GLRS_COMPLETE=fish glrs-fork -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
