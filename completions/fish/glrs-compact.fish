complete -c glrs-compact -l instruction -d 'Steer the brief: what it should keep ("Additional focus: …")' -r
complete -c glrs-compact -s m -l model -d 'The model that writes the brief (else compactModel, else the session\'s model)' -r
complete -c glrs-compact -l all -d 'Every session over its trigger (skipping open ones)'
complete -c glrs-compact -l if-needed -d 'Only when over the trigger (always so with --all)'
complete -c glrs-compact -s q -l quiet -d 'Print nothing unless something failed (no result lines, no notes of skipped sessions)'
complete -c glrs-compact -l no-flush -d 'Skip the memory flush (the silent turn that saves notes before compacting)'
complete -c glrs-compact -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-compact -s V -l version -d 'Print version'
