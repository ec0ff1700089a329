complete -c jackin-keep -l policy -d 'Override the configured exit policy (discard means clean)' -r -f -a "ask\t''
keep\t''
clean\t''
discard\t''"
complete -c jackin-keep -l answer -d 'The answer to the ask dialog, given instead of asking: it wins over the terminal\'s dialog and the container\'s exit screen (for scripts run from an interactive shell)' -r -f -a "return\t'Return to the agent: change nothing'
keep\t'Exit and keep the session to resume later'
clean\t'Exit and clean up (the unfinished work is quarantined, then deleted by jackin-purge)'"
complete -c jackin-keep -l export -d 'Write the kept session INSTANCE to one archive FILE instead (reads no stdin), for jackin-restore --import on another host: its manifest, isolation records and launch recipe, agent home and state, and per mount the commits only it holds, its base commit and remote URLs, and its changed and untracked files. Never the agents\' auth slots or a secret\'s value (without --with-auth). The session stays kept here; a live one is refused (exit 5)' -r -F
complete -c jackin-keep -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-keep -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-keep -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-keep -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-keep -l host -d 'Run this on another host too, over ssh (user@host, ssh://user@host:port); repeat for each. A view (assess, --list, --dry-run, --plan) runs here and there, merged, each row with its host; a run that changes something runs on the one host named instead of here' -r
complete -c jackin-keep -l hosts-timeout -d 'With --host or --all-hosts: how long each host may take to answer' -r
complete -c jackin-keep -l keep -d 'Keep the session whatever the policy and the verdict: "keep this for tomorrow"'
complete -c jackin-keep -l discard-unfinished -d 'Allow cleaning up a session whose work cannot be read (it cannot be saved first)'
complete -c jackin-keep -l stop -d 'Stop a still-running session\'s role container first (else it is live: exit 5)'
complete -c jackin-keep -l with-auth -d 'With --export: carry the agents\' auth slots (claude/, codex/, …) and the agent home\'s credentials (.codex/auth.json, .config/gh, …) too; the record says so'
complete -c jackin-keep -l dry-run -d 'Decide and emit the decisions with "dry_run": true; change nothing (with --export: say what the archive would hold, write nothing)'
complete -c jackin-keep -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-keep -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-keep -l all-hosts -d 'With --host: every host listed in <config-dir>/jackin-tools-hosts (one per line, # for a comment) too'
complete -c jackin-keep -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-keep -s V -l version -d 'Print version'

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
end

function __jackin_keep_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] --policy --answer --export --docker-host --home --config-dir --format --host --hosts-timeout; and return 1
    contains -- --export $words; or return 1
    return 0
end

complete -c jackin-keep -f -n __jackin_keep_wants_session -a '(__jackin_session_names candidate jackin-restore --list)'
