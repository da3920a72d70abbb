# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_glrs_global_optspecs
    string join \n h/help V/version
end

function __fish_glrs_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_glrs_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_glrs_using_subcommand
    set -l cmd (__fish_glrs_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c glrs -n "__fish_glrs_needs_command" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_needs_command" -s V -l version -d 'Print version'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "chat" -d 'the REPL, or one turn with -p (the default)'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "sessions" -d 'list, show, search and remove sessions'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "fork" -d 'copy a session, whole or up to entry N, to a new id'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "compact" -d 'summarise the older part of a session into a brief'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "artifacts" -d 'list, read, annotate and remove compaction artifacts'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "man" -d 'Print a program\'s man page (glrs man sessions | man -l -), or write them all into a folder'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "completions" -d 'Print the completions of every glrs program for SHELL, or write them into a folder'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "config" -d 'The config file: its path, or its contents with secrets as ***'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "models" -d 'The providers and models that can be used: window, the key each needs, and whether it is set'
complete -c glrs -n "__fish_glrs_needs_command" -f -a "help" -d 'Print a program\'s help: glrs help chat'
complete -c glrs -n "__fish_glrs_using_subcommand chat" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand sessions" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand fork" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand compact" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand artifacts" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand man" -l dir -d 'Write every page into this folder (e.g. ~/.local/share/man/man1)' -r -F
complete -c glrs -n "__fish_glrs_using_subcommand man" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand completions" -l dir -d 'Write one file a program into this folder, named as the shell looks for it' -r -F
complete -c glrs -n "__fish_glrs_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs -n "__fish_glrs_using_subcommand config; and not __fish_seen_subcommand_from path show" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand config; and not __fish_seen_subcommand_from path show" -f -a "path" -d 'Print the config file\'s path (when there is no file there, defaults apply)'
complete -c glrs -n "__fish_glrs_using_subcommand config; and not __fish_seen_subcommand_from path show" -f -a "show" -d 'Print the config as glrs reads it (GLRS_MODEL applied), secrets as ***'
complete -c glrs -n "__fish_glrs_using_subcommand config; and __fish_seen_subcommand_from path" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand config; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand models" -l json -d 'Print a JSON array'
complete -c glrs -n "__fish_glrs_using_subcommand models" -s h -l help -d 'Print help'
complete -c glrs -n "__fish_glrs_using_subcommand help" -s h -l help -d 'Print help'
