complete -c jackin-notify -l event-timeout -d 'How long PROGRAM may run before it is killed (the next event still runs)' -r
complete -c jackin-notify -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-notify -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-notify -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-notify -l host -d 'Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)' -r
complete -c jackin-notify -l hosts-timeout -d 'With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)' -r
complete -c jackin-notify -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-notify -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-notify -l all-hosts -d 'Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)'
complete -c jackin-notify -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-notify -s V -l version -d 'Print version'
