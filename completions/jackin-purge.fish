complete -c jackin-purge -l older-than -d 'Retention: purge kept instances last updated longer ago than DUR (e.g. 30d, 12h)' -r
complete -c jackin-purge -l keep-last -d 'Retention: keep the N newest kept instances per (workspace, role, agent), purge the rest' -r
complete -c jackin-purge -l quarantine-days -d 'Days the quarantine of a discard is kept before --expire-quarantine deletes it [default: 14], recorded in the quarantine when the work is saved: give it to the purge that discards. With --expire-quarantine it counts only for the leftover of a save that died half-way (no receipt), from its last change' -r
complete -c jackin-purge -l record-days -d 'Days the record each purge leaves of a session (launch, outcome, what its work became, its agent\'s conversation) is kept before --expire-quarantine deletes it [default: 90]' -r
complete -c jackin-purge -l conversation-path -d 'Where the agent keeps its conversation, relative to its home (data/<c>/home/), copied into the session\'s record; repeat for each; replaces the known agents\' paths' -r
complete -c jackin-purge -l conversation-cap -d 'The most bytes of conversation a record copies (files past it are named, not copied) [default: 67108864, 64 MiB]' -r
complete -c jackin-purge -l slim-older-than -d 'Retention: slim the kept sessions last updated longer ago than DUR (e.g. 7d) and not slimmed since; implies --slim' -r
complete -c jackin-purge -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-purge -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-purge -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-purge -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-purge -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-purge -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-purge -l terminal -d 'Purge every instance whose status is terminal (clean_exited, superseded, purged; failed_setup only when its work is verified clean)'
complete -c jackin-purge -l discard-unfinished -d 'Allow deleting work at risk; it is saved to the quarantine first'
complete -c jackin-purge -l no-quarantine -d 'Do not save work at risk before deleting it (only with --discard-unfinished): the one exception to "discarded work is saved first"; what is deleted cannot be got back'
complete -c jackin-purge -l expire-quarantine -d 'Delete expired quarantines and expired session records (alone: only that; reads no stdin)'
complete -c jackin-purge -l stop -d 'Stop a still-running session\'s containers first (else it is live: exit 5)'
complete -c jackin-purge -l slim -d 'Slim kept sessions instead of purging them: remove from their mounts only what git ignores (as git clean -dX would: build outputs, caches), except ignored dotfiles outside ignored directories (.env.local); the session, its work and its verdict stay. A live session is refused (exit 5). With INSTANCE, or --kept for every kept session'
complete -c jackin-purge -l kept -d 'With --slim: every kept session (restore_available, preserved_dirty, preserved_unpushed)'
complete -c jackin-purge -l dry-run -d 'Change nothing; emit the purged records that would be written, with "dry_run": true'
complete -c jackin-purge -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-purge -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-purge -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-purge -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-purge -s V -l version -d 'Print version'

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
end

function __jackin_purge_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] --older-than --keep-last --quarantine-days --record-days --conversation-path --conversation-cap --slim-older-than --docker-host --home --config-dir --format --host --hosts-timeout; and return 1
    return 0
end

complete -c jackin-purge -f -n __jackin_purge_wants_session -a '(__jackin_session_names assessment jackin-assess --all)'
