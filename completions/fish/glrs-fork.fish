complete -c glrs-fork -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-fork -s V -l version -d 'Print version'
