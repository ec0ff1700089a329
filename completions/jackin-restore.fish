complete -c jackin-restore -l workspace -d 'Only sessions of this workspace' -r
complete -c jackin-restore -l role -d 'Only sessions of this role' -r
complete -c jackin-restore -l agent -d 'Only sessions of this agent runtime' -r
complete -c jackin-restore -l workdir -d 'Only sessions with this working directory' -r
complete -c jackin-restore -l sort -d 'The list\'s order: age (newest first) or size (most bytes on disk first)' -r -f -a "age\t'Newest first'
size\t'Most bytes on disk first'"
complete -c jackin-restore -l retention -d 'The --older-than of your retention purge (env JACKIN_KEPT_RETENTION): --list says when each kept clean session will be deleted by it ("expires in 3d 4h")' -r
complete -c jackin-restore -l record -d 'Show the record of one purged session: C is its container name or a unique prefix (4+ characters) of its instance id' -r
complete -c jackin-restore -l recover -d 'Put a quarantine\'s work back: Q is its directory, or a session\'s container name, id or unique id prefix (its newest quarantine). The saved refs come back under refs/jackin/recovered/, not as branches, which jackin\'s exit check would count (a submodule\'s in its git directory), the files and what was staged in a new worktree beside the host repository; nothing that exists is touched' -r
complete -c jackin-restore -l into -d 'With --recover, when the host repository is gone: recover into a new repository at DIR' -r -F
complete -c jackin-restore -l import -d 'Moved to `jackin-move import FILE`, which this runs (hidden, for one release)' -r -F
complete -c jackin-restore -l repo -d 'With the hidden --import (jackin-move import --repo)' -r
complete -c jackin-restore -l since -d 'With --interrupted: only sessions interrupted within this long before now (`24h`, `3d`; default: JACKIN_INTERRUPTED_SINCE, else 24h); older ones are listed as left alone, with how to resume them one at a time' -r
complete -c jackin-restore -l jobs -d 'With --interrupted: how many sessions are resumed at the same time [default: 4]' -r
complete -c jackin-restore -l health-timeout -d 'Seconds to wait for the sidecar\'s health command to succeed' -r
complete -c jackin-restore -l fetch-timeout -d 'Seconds tier 3\'s fetch of the role source waits for the server to say anything before it gives up (exit 4)' -r
complete -c jackin-restore -l docker-host -d 'The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]' -r
complete -c jackin-restore -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-restore -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-restore -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-restore -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-restore -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-restore -l list -d 'List resumable sessions, newest first, instead of opening the picker (the default without INSTANCE when no terminal can show the picker); change nothing'
complete -c jackin-restore -l quarantined -d 'List the quarantines discards left, newest first: what each holds, until when, and whether it can be recovered now; change nothing'
complete -c jackin-restore -l records -d 'List the records purged sessions left, newest first: how each was launched, how it ended, what its work became (its commits pushed, integrated or quarantined), the copy of its agent\'s conversation, and when the record expires; change nothing'
complete -c jackin-restore -l interrupted -d 'Resume every session the host or engine interrupted (crashed: killed by the host, its container exited or removed while the session was in use) within --since, several at a time, each by the cheapest faithful tier, one `interrupted` record each; a session jackin kept with its container running (a detach) that the host then stopped counts too, whatever its status. Sessions in use, kept on purpose or purged are not touched (one in use, or interrupted before --since, is listed as left alone); --workspace, --role, --agent and --workdir narrow it. Needs --yes (nobody is asked) or --plan. Exit 0 when every one was resumed or there was none, 6 when some were not (4 when each of those only could not be reached: retry later)'
complete -c jackin-restore -l as-is -d 'Start a stopped container as it is, even when it no longer matches its launch recipe (another image, mounts, variables, network or sidecar): without it such a container is replaced from the recipe at tier 2, the new one created and checked before the old one is removed'
complete -c jackin-restore -l plan -d 'Say which tier and steps a resume would take; change nothing (same as --dry-run)'
complete -c jackin-restore -l dry-run -d 'Change nothing; print the records that would be written'
complete -c jackin-restore -s y -l yes -d 'Acknowledge the preserved-work summary without a terminal'
complete -c jackin-restore -l exec -d 'Attach once the session runs: `jackin hardline C` where jackin is installed (its finalizer settles the session when it is left), else jackin\'s capsule, after which the session is settled here as jackin\'s exit settles it (assess, keep\'s policy and dialog, purge)'
complete -c jackin-restore -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-restore -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-restore -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-restore -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-restore -s V -l version -d 'Print version'

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
end

function __jackin_restore_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] --workspace --role --agent --workdir --sort --retention --record --recover --into --import --repo --since --jobs --health-timeout --fetch-timeout --docker-host --home --config-dir --format --host --hosts-timeout; and return 1
    return 0
end

complete -c jackin-restore -f -n __jackin_restore_wants_session -a '(__jackin_session_names candidate jackin-restore --list)'
