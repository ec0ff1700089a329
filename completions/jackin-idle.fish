complete -c jackin-idle -l idle-for -d 'The window for every running session, whatever its workspace\'s policy says: no sign of use for this long is idle' -r
complete -c jackin-idle -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-idle -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-idle -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-idle -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-idle -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-idle -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-idle -s y -l yes -d 'Keep each idle session (stop and remove its containers, its recipe and work kept)'
complete -c jackin-idle -l dry-run -d 'With --yes: look at each idle session again as the run would, keep none, write nothing'
complete -c jackin-idle -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-idle -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-idle -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-idle -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-idle -s V -l version -d 'Print version'
