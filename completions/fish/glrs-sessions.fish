# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_glrs_sessions_global_optspecs
    string join \n h/help V/version
end

function __fish_glrs_sessions_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_glrs_sessions_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_glrs_sessions_using_subcommand
    set -l cmd (__fish_glrs_sessions_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -s V -l version -d 'Print version'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "ls" -d 'List sessions, newest first: id, updatedAt, entries, contextTokens, cwd, title'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "show" -d 'Print a session\'s transcript with entry numbers, or the raw file with --json'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "status" -d 'Print what is known about a session: times, size, usage, artifacts, who has it open'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "grep" -d 'Search every session\'s entries: id, entry, type, line'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "path" -d 'Print the sessions folder, or the file of one session'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "rm" -d 'Remove sessions with their artifacts (never one that is open)'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "pin" -d 'Pin a session, so that cleanup never removes it'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "unpin" -d 'Unpin a session'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "keys" -d 'The key map: key, session, updatedAt, the reset that applies next'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "cleanup" -d 'Remove stale, excess and leftover files (session.maintenance in the config)'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "export" -d 'Write a session\'s transcript as Markdown, one self-contained HTML page, or JSON Lines'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "import" -d 'Put back what a chat could not save: append a recovery file\'s entries to its session'
complete -c glrs-sessions -n "__fish_glrs_sessions_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l key -d 'Only sessions of this key' -r
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -s n -d 'At most this many sessions' -r
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l format -d 'Columns to print, comma-separated, from: id, updatedAt, createdAt, entries, contextTokens, cwd, title, key, model, parent, pinned, legacy, path' -r
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l json -d 'Print a JSON array'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l jsonl -d 'Print one JSON object a line'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l cwd -d 'Only sessions started in the current directory'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l legacy -d 'Only sessions from the legacy glorious folder'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -l tree -d 'Show lineage: each fork\'s title indented under its parent\'s'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand ls" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand show" -l from -d 'Start at entry N' -r
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand show" -l tail -d 'Only the last N entries' -r
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand show" -l json -d 'Print the raw session file (with --from/--tail: the chosen entries as a JSON array)'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand show" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand status" -l json -d 'Print a JSON object'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand status" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand grep" -s i -l ignore-case -d 'Ignore case'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand grep" -l json -d 'Print a JSON array'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand grep" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand path" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand rm" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand pin" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand unpin" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand keys" -l json -d 'Print a JSON array'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand keys" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand cleanup" -l dry-run -d 'Only say what would be removed (the default in "warn" mode)'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand cleanup" -l enforce -d 'Remove, whatever the configured mode'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand cleanup" -l json -d 'Print a JSON array'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand cleanup" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand export" -l format -d 'md: a heading per message; html: one page, nothing to fetch; jsonl: one entry a line [default: from the -o file\'s extension, else md]' -r -f -a "md\t'Markdown: a heading per message, tool calls and results fenced'
html\t'One HTML page with its styles inline and nothing to fetch'
jsonl\t'One entry a line, as stored'"
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand export" -s o -l output -d 'Write to FILE (created 0600) instead of stdout' -r -F
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand import" -s h -l help -d 'Print help'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "ls" -d 'List sessions, newest first: id, updatedAt, entries, contextTokens, cwd, title'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "show" -d 'Print a session\'s transcript with entry numbers, or the raw file with --json'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "status" -d 'Print what is known about a session: times, size, usage, artifacts, who has it open'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "grep" -d 'Search every session\'s entries: id, entry, type, line'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "path" -d 'Print the sessions folder, or the file of one session'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "rm" -d 'Remove sessions with their artifacts (never one that is open)'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "pin" -d 'Pin a session, so that cleanup never removes it'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "unpin" -d 'Unpin a session'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "keys" -d 'The key map: key, session, updatedAt, the reset that applies next'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "cleanup" -d 'Remove stale, excess and leftover files (session.maintenance in the config)'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "export" -d 'Write a session\'s transcript as Markdown, one self-contained HTML page, or JSON Lines'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "import" -d 'Put back what a chat could not save: append a recovery file\'s entries to its session'
complete -c glrs-sessions -n "__fish_glrs_sessions_using_subcommand help; and not __fish_seen_subcommand_from ls show status grep path rm pin unpin keys cleanup export import help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
