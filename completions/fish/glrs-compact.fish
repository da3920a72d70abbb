complete --keep-order --exclusive --command glrs-compact --arguments "(_GLRS_COMPLETE=fish glrs-compact -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
