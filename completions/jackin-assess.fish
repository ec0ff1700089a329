complete -c jackin-assess -l home -d 'The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]' -r -F
complete -c jackin-assess -l config-dir -d 'jackin\'s config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]' -r -F
complete -c jackin-assess -l format -d 'Output format' -r -f -a "auto\t'Text when stdout is a terminal, JSON Lines otherwise'
json\t'JSON Lines records, one per line'
text\t'One readable line or block per instance'"
complete -c jackin-assess -l all -d 'Assess every instance on the host'
complete -c jackin-assess -l diff -d 'Add each changed file\'s unified diff to the mount (the inspect view)'
complete -c jackin-assess -l disk -d 'Add the bytes on disk: the data directory outside the mounts, each mount\'s work, what git ignores and the rebuildable part of it (walks every file: not for the exit hook)'
complete -c jackin-assess -l exit-code -d 'Exit 1 when any verdict is not clean'
complete -c jackin-assess -s q -l quiet -d 'Print no warnings or progress on stderr (errors are still printed)'
complete -c jackin-assess -s v -l verbose -d 'Say more on stderr about what is being done'
complete -c jackin-assess -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-assess -s V -l version -d 'Print version'
