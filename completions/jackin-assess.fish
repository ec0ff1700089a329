complete -c jackin-assess -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-assess -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-assess -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-assess -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-assess -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-assess -l all -d 'Assess every instance on the host'
complete -c jackin-assess -l diff -d 'Add each changed file\'s unified diff to the mount (the inspect view)'
complete -c jackin-assess -l disk -d 'Add the bytes on disk: the data directory outside the mounts, each mount\'s work, what git ignores and the rebuildable part of it (walks every file: not for the exit hook)'
complete -c jackin-assess -l exit-code -d 'Exit 1 when any verdict is not clean'
complete -c jackin-assess -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-assess -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-assess -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-assess -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-assess -s V -l version -d 'Print version'

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
end

function __jackin_assess_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] --home --config-dir --format --host --hosts-timeout; and return 1
    return 0
end

complete -c jackin-assess -f -n __jackin_assess_wants_session -a '(__jackin_session_names assessment jackin-assess --all)'
