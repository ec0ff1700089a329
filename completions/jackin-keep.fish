complete -c jackin-keep -l policy -d 'Override the configured exit policy (discard means clean)' -r -f -a "ask\t''
keep\t''
clean\t''
discard\t''"
complete -c jackin-keep -l answer -d 'The answer to the ask dialog, given instead of asking: it wins over the terminal\'s dialog and the container\'s exit screen (for scripts run from an interactive shell)' -r -f -a "return\t'Return to the agent: change nothing'
keep\t'Exit and keep the session to resume later'
clean\t'Exit and clean up (the unfinished work is quarantined, then deleted by jackin-purge)'"
complete -c jackin-keep -l export -d 'Moved to `jackin-move export FILE INSTANCE`, which this runs (hidden, for one release)' -r -F
complete -c jackin-keep -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-keep -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-keep -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-keep -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-keep -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-keep -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-keep -l keep -d 'Keep the session whatever the policy and the verdict: "keep this for tomorrow"'
complete -c jackin-keep -l discard-unfinished -d 'Allow cleaning up a session whose work cannot be read (it cannot be saved first)'
complete -c jackin-keep -l stop -d 'Stop a still-running session\'s role container first (else it is live: exit 5)'
complete -c jackin-keep -l with-auth -d 'With the hidden --export (jackin-move export --with-auth)'
complete -c jackin-keep -l dry-run -d 'Decide and emit the decisions with "dry_run": true; change nothing'
complete -c jackin-keep -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-keep -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-keep -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-keep -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-keep -s V -l version -d 'Print version'
