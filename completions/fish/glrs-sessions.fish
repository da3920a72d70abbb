complete --keep-order --exclusive --command glrs-sessions --arguments "(_GLRS_COMPLETE=fish glrs-sessions -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
