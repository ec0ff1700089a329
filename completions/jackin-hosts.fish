complete -c jackin-hosts -l host -d 'Another host, over ssh (user@host, ssh://user@host:port); repeat for each' -r
complete -c jackin-hosts -l hosts-timeout -d 'How long each host may take to answer' -r
complete -c jackin-hosts -l all-hosts -d 'Every host listed in <config-dir>/jackin-tools-hosts too (one per line, # for a comment)'
complete -c jackin-hosts -s h -l help -d 'Print help (see more with \'--help\')'
complete -c jackin-hosts -s V -l version -d 'Print version'
