complete -c jackin-reconcile -l on-event -d 'Moved to `jackin-reconcile | jackin-notify PROGRAM`, which this runs (hidden, for one release): PROGRAM run for each status change and each expiry warned of' -r -F
complete -c jackin-reconcile -l event-timeout -d 'With the hidden --on-event (jackin-notify --event-timeout)' -r
complete -c jackin-reconcile -l warn-before -d 'Warn once (an `expiring` record, for jackin-notify) of each quarantine, and each kept clean session under --retention, that jackin-purge will delete within DUR' -r
complete -c jackin-reconcile -l retention -d 'With --warn-before: the --older-than of your retention purge (default: env JACKIN_KEPT_RETENTION), so that a kept clean session last updated longer ago is warned of' -r
complete -c jackin-reconcile -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-reconcile -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-reconcile -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-reconcile -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-reconcile -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-reconcile -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-reconcile -l watch -d 'Keep running: reconcile again on the engine\'s die, destroy, start and oom events, until SIGTERM or SIGINT; reconnect with backoff when the engine restarts'
complete -c jackin-reconcile -l exit-code -d 'Exit 1 when anything changed (or would have, with --dry-run); not with --watch, which ends only on a signal (exit 0 or 130)'
complete -c jackin-reconcile -l dry-run -d 'Change nothing; emit the records a real run would emit, each with "dry_run": true'
complete -c jackin-reconcile -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-reconcile -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-reconcile -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-reconcile -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-reconcile -s V -l version -d 'Print version'

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
end

function __jackin_reconcile_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] --on-event --event-timeout --warn-before --retention --docker-host --home --config-dir --format --host --hosts-timeout; and return 1
    return 0
end

complete -c jackin-reconcile -f -n __jackin_reconcile_wants_session -a '(__jackin_session_names assessment jackin-assess --all)'
