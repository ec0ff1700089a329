_jackin__reconcile() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="jackin__reconcile"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        jackin__reconcile)
            opts="-q -v -h -V --watch --exit-code --dry-run --on-event --event-timeout --warn-before --retention --docker-host --home --config-dir --format --quiet --verbose --host --all-hosts --hosts-timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --on-event)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --event-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warn-before)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retention)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --docker-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --home)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "auto json text" -- "${cur}"))
                    return 0
                    ;;
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hosts-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
_jackin_session_names() {
    local record="$1"
    shift
    local listing=("$@")
    if command -v timeout >/dev/null 2>&1; then
        listing=(timeout 3 "${listing[@]}")
    fi
    "${listing[@]}" --format json --quiet 2>/dev/null </dev/null |
        awk -v type="\"type\":\"$record\"" 'index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }'
}

_jackin__reconcile_with_sessions() {
    _jackin__reconcile "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$cur" in -*) return 0 ;; esac
    case "$prev" in --on-event|--event-timeout|--warn-before|--retention|--docker-host|--home|--config-dir|--format|--host|--hosts-timeout|=) return 0 ;; esac
    COMPREPLY+=($(compgen -W "$(_jackin_session_names assessment jackin-assess --all)" -- "$cur"))
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _jackin__reconcile_with_sessions -o nosort -o bashdefault -o default jackin-reconcile
else
    complete -F _jackin__reconcile_with_sessions -o bashdefault -o default jackin-reconcile
fi
