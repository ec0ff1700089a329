# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_jackin_move_global_optspecs
    string join \n home= config-dir= format= q/quiet v/verbose host= all-hosts hosts-timeout= h/help V/version
end

function __fish_jackin_move_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_jackin_move_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_jackin_move_using_subcommand
    set -l cmd (__fish_jackin_move_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c jackin-move -n "__fish_jackin_move_needs_command" -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_needs_command" -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_needs_command" -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-move -n "__fish_jackin_move_needs_command" -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-move -n "__fish_jackin_move_needs_command" -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-move -n "__fish_jackin_move_needs_command" -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -s V -l version -d 'Print version'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -f -a "export" -d 'Write the kept session INSTANCE to one archive FILE: its manifest, isolation records and launch recipe, agent home and state, and per mount the commits only it holds, its base commit and remote URLs, and its changed and untracked files. Never the agents\' auth slots or a secret\'s value (without --with-auth). The session stays kept here; a live one is refused (exit 5)'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -f -a "import" -d 'Bring in a session exported on another host: each mount\'s commits into the repository of this host\'s jackin config with the same remote URL (or --repo), its worktree or clone where jackin puts it, its files on top, and its manifest, records and recipe in this home, as a kept session that jackin-restore INSTANCE resumes. An archive that is truncated, altered or of a newer format, or an instance of the same name here, is refused with nothing written (exit 3)'
complete -c jackin-move -n "__fish_jackin_move_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l with-auth -d 'Carry the agents\' auth slots (claude/, codex/, …) and the agent home\'s credentials (.codex/auth.json, .config/gh, …) too; the record says so'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l dry-run -d 'Say what the archive would hold; write nothing'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l repo -d 'The host repository for the mount at DST (its container path), instead of the one found by its remote URL; repeat for each mount' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l dry-run -d 'Check the archive and say what would be made; write nothing'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand import" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand help; and not __fish_seen_subcommand_from export import help" -f -a "export" -d 'Write the kept session INSTANCE to one archive FILE: its manifest, isolation records and launch recipe, agent home and state, and per mount the commits only it holds, its base commit and remote URLs, and its changed and untracked files. Never the agents\' auth slots or a secret\'s value (without --with-auth). The session stays kept here; a live one is refused (exit 5)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand help; and not __fish_seen_subcommand_from export import help" -f -a "import" -d 'Bring in a session exported on another host: each mount\'s commits into the repository of this host\'s jackin config with the same remote URL (or --repo), its worktree or clone where jackin puts it, its files on top, and its manifest, records and recipe in this home, as a kept session that jackin-restore INSTANCE resumes. An archive that is truncated, altered or of a newer format, or an instance of the same name here, is refused with nothing written (exit 3)'
complete -c jackin-move -n "__fish_jackin_move_using_subcommand help; and not __fish_seen_subcommand_from export import help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
