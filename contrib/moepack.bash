# bash completion for moepack and moepackfs                 -*- shell-script -*-
#
# `make install` puts this file into bash-completion's directory as
# "moepack", and "moepackfs" as a link to it.  It holds no option list of
# its own: it asks the program being completed, whose hidden
# `--list-options` prints the very tables it parses its command line with
# (moepack: the commands and their operands, and each command's getopt
# table; moepackfs: its fuse_opt table and the -o verify modes), so it
# cannot drift from the programs.  What an option's argument is (a file, a
# directory, a number) comes from the NAME=ARG of the program's --help.
# LAYER and EXPERT operands come from `moepack ls` of the pack named
# earlier on the line.

# _moepack_words: COMP_WORDS with "=" and ":" glued back to their
# neighbours (bash splits "--manifest=m.json" into three words), as the
# arrays words and cword of the caller.
_moepack_words()
{
    local i w glue=0
    words=()
    cword=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
        w=${COMP_WORDS[i]}
        if ((i > 0)) && { ((glue)) || [[ -n $w && -z ${w//[=:]/} ]]; }; then
            words[${#words[@]} - 1]+=$w
        else
            words+=("$w")
        fi
        glue=0
        [[ -n $w && -z ${w//[=:]/} ]] && glue=1
        ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
}

# _moepack_reply CUR CANDIDATE...: the candidates that start with CUR, as
# readline wants them: without the part of CUR up to its last "=" or ":",
# which readline does not count as the word being completed.
_moepack_reply()
{
    local cur=$1 c
    local head=${cur%"${cur##*[=:]}"}
    shift
    for c in "$@"; do
        [[ $c == "$cur"* ]] && COMPREPLY+=("${c#"$head"}")
    done
}

# _moepack_files CUR [dirs|gguf]: file (or directory) names, as readline
# would complete them.
_moepack_files()
{
    local cur=$1 kind=${2-} head f
    head=${cur%"${cur##*[=:]}"}
    compopt -o filenames 2>/dev/null
    while IFS= read -r f; do
        case $kind in
        dirs) ;;
        gguf) [[ -d $f || $f == *.gguf ]] || continue ;;
        esac
        COMPREPLY+=("${f#"$head"}")
    done < <(if [[ $kind == dirs ]]; then compgen -d -- "$cur"; else compgen -f -- "$cur"; fi)
}

# _moepack_argkind PROG... NAME: what --help calls NAME's argument
# ("--manifest=FILE", "-o readahead_kb=N"): file, dir or none.
_moepack_argkind()
{
    local name=${!#} arg
    arg=$("${@:1:$#-1}" --help 2>/dev/null |
        sed -n "s/.*[- ]$name=\([A-Za-z_.]*\).*/\1/p" | head -n 1)
    case $arg in
    N | SIZE | M | MODE) echo none ;;
    DIR | PATH) echo dir ;;
    *) echo file ;;
    esac
}

# _moepack_value KIND CUR: complete an option's argument of that kind.
_moepack_value()
{
    case $1 in
    file) _moepack_files "$2" ;;
    dir) _moepack_files "$2" dirs ;;
    esac
}

_moepack()
{
    local words cword
    _moepack_words
    local prog=${words[0]} cur=${words[cword]} prev=${words[cword - 1]}
    local cmd line name short arg i
    COMPREPLY=()
    [[ $prog == ~* ]] && prog=${prog/#\~/$HOME}

    if ((cword == 1)); then
        # moepack's own two options, then the commands
        if [[ $cur == -* ]]; then
            _moepack_reply "$cur" --help --version
        else
            _moepack_reply "$cur" help $("$prog" --list-options 2>/dev/null | cut -d' ' -f1)
        fi
        return 0
    fi
    cmd=${words[1]}
    if [[ $cmd == help ]]; then
        ((cword == 2)) &&
            _moepack_reply "$cur" $("$prog" --list-options 2>/dev/null | cut -d' ' -f1)
        return 0
    fi

    # the command's getopt table: "LONG SHORT ARG" lines
    local -a longs=() with_arg=()
    while read -r name short arg; do
        [[ $name == -- ]] && continue
        if [[ $arg == arg ]]; then
            [[ $name != - ]] && longs+=("$name=") && with_arg+=("$name")
            [[ $short != - ]] && with_arg+=("$short")
        else
            [[ $name != - ]] && longs+=("$name")
        fi
    done < <("$prog" --list-options "$cmd" 2>/dev/null)

    # an option's argument: "--manifest FILE", "-m FILE" or "--manifest=FILE"
    local opt=
    if [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
    elif ((cword > 2)) && [[ " ${with_arg[*]} " == *" $prev "* ]]; then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        [[ " ${with_arg[*]} " == *" $opt "* ]] || return 0
        # -m is --manifest: find the long name for --help
        if [[ $opt != --* ]]; then
            opt=$("$prog" --list-options "$cmd" 2>/dev/null |
                while read -r name short arg; do
                    [[ $short == "$opt" ]] && echo "$name"
                done)
        fi
        _moepack_value "$(_moepack_argkind "$prog" "$cmd" "${opt#--}")" "${cur#--*=}"
        return 0
    fi
    if [[ $cur == -* ]]; then
        _moepack_reply "$cur" "${longs[@]}"
        [[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace 2>/dev/null
        return 0
    fi

    # operands: which one is this, and what did the ones before say?
    local -a operands=()
    local manifest= dashdash=0
    for ((i = 2; i < cword; i++)); do
        if ((!dashdash)) && [[ ${words[i]} == -- ]]; then
            dashdash=1
        elif ((!dashdash)) && [[ ${words[i]} == -?* ]]; then
            case ${words[i]} in
            --manifest=*) manifest=${words[i]#*=} ;;
            --manifest | -m) manifest=${words[i + 1]} ;;
            esac
            [[ ${words[i]} != *=* && " ${with_arg[*]} " == *" ${words[i]} "* ]] && ((i++))
        else
            operands+=("${words[i]}")
        fi
    done
    local -a spec
    read -r -a spec < <("$prog" --list-options 2>/dev/null |
        sed -n "s/^$cmd //p" | tr -d '[]')
    local n=${#operands[@]} want
    if ((n < ${#spec[@]})); then
        want=${spec[n]}
    elif [[ ${spec[*]: -1} == *... ]]; then
        want=${spec[*]: -1}
    else
        return 0
    fi
    local pack=${operands[0]-}
    local -a ls=("$prog" ls)
    [[ -n $manifest ]] && ls+=(--manifest "$manifest")
    case $want in
    PACK) _moepack_files "$cur" ;;
    *.gguf...) _moepack_files "$cur" gguf ;;
    LAYER)
        _moepack_reply "$cur" $("${ls[@]}" -- "$pack" 2>/dev/null |
            awk 'NF == 6 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && !seen[$2]++ { print $2 }')
        ;;
    EXPERT)
        _moepack_reply "$cur" $("${ls[@]}" -- "$pack" "${operands[1]}" 2>/dev/null |
            awk 'NF == 6 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && !seen[$3]++ { print $3 }')
        ;;
    *'|'*) _moepack_reply "$cur" ${want//|/ } ;;
    *) _moepack_files "$cur" ;;
    esac
    return 0
}

_moepackfs()
{
    local words cword
    _moepack_words
    local prog=${words[0]} cur=${words[cword]} prev=${words[cword - 1]}
    local templ kind values i
    COMPREPLY=()
    [[ $prog == ~* ]] && prog=${prog/#\~/$HOME}

    # option_spec: "TEMPLATE KIND [VALUE...]"; mount(8)'s ignored ones and
    # libfuse's fsname/subtype (moepackfs sets them) are not offered
    local -a flags=() subopts=() verify=()
    while read -r templ kind values; do
        case $kind:$templ in
        ignored:* | *:fsname= | *:subtype=) ;;
        *:-*) flags+=("$templ") ;;
        *)
            subopts+=("$templ")
            [[ $templ == verify= ]] && read -r -a verify <<<"$values"
            ;;
        esac
    done < <("$prog" --list-options 2>/dev/null)

    if [[ $prev == -o ]]; then
        # one element of a comma-separated list: "allow_other,verify=fu"
        local done_part=${cur%"${cur##*,}"} part=${cur##*,}
        if [[ $part == *=* ]]; then
            local name=${part%%=*}
            [[ " ${subopts[*]} " == *" $name= "* ]] || return 0
            if [[ $name == verify ]]; then
                _moepack_reply "$cur" "${verify[@]/#/$done_part$name=}"
            else
                # readline completes what follows the "="
                _moepack_value "$(_moepack_argkind "$prog" "$name")" "${part#*=}"
            fi
        else
            _moepack_reply "$cur" "${subopts[@]/#/$done_part}"
        fi
        compopt -o nospace 2>/dev/null
        return 0
    fi
    if [[ $cur == -* ]]; then
        _moepack_reply "$cur" -o "${flags[@]}"
        return 0
    fi
    # PACK, then MOUNTPOINT
    local n=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        -o) ((i++)) ;;
        -*) ;;
        *) ((n++)) ;;
        esac
    done
    case $n in
    0) _moepack_files "$cur" ;;
    1) _moepack_files "$cur" dirs ;;
    esac
    return 0
}

complete -F _moepack moepack
complete -F _moepackfs moepackfs
