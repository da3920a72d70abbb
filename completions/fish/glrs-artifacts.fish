# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_glrs_artifacts_global_optspecs
    string join \n h/help V/version
end

function __fish_glrs_artifacts_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_glrs_artifacts_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_glrs_artifacts_using_subcommand
    set -l cmd (__fish_glrs_artifacts_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -s V -l version -d 'Print version'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "ls" -d 'List artifacts, oldest first: file, session, createdAt, label, messages, note'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "cat" -d 'Print an artifact: a FILE, ID (its newest) or ID:N (its Nth, oldest first)'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "path" -d 'Print the artifacts folder, or one session\'s'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "annotate" -d 'Set an artifact\'s note (empty text clears it)'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "rm" -d 'Remove an artifact'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand ls" -l all -d 'Every session\'s artifacts'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand ls" -l json -d 'Print a JSON array'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand ls" -s h -l help -d 'Print help'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand cat" -s h -l help -d 'Print help'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand path" -s h -l help -d 'Print help'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand annotate" -s h -l help -d 'Print help'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand rm" -s h -l help -d 'Print help'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "ls" -d 'List artifacts, oldest first: file, session, createdAt, label, messages, note'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "cat" -d 'Print an artifact: a FILE, ID (its newest) or ID:N (its Nth, oldest first)'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "path" -d 'Print the artifacts folder, or one session\'s'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "annotate" -d 'Set an artifact\'s note (empty text clears it)'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "rm" -d 'Remove an artifact'
complete -c glrs-artifacts -n "__fish_glrs_artifacts_using_subcommand help; and not __fish_seen_subcommand_from ls cat path annotate rm help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
