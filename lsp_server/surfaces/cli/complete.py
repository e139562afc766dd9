"""What the ``handoff`` parser knows, said back to the user: "did you mean" for a
mistyped verb or option, ``handoff help VERB``, and the shell completion scripts of
``handoff completion bash|zsh|fish``, all read from the one argparse parser."""

from __future__ import annotations

import argparse
import difflib
import shlex

#: The global options that take a value (a word after them is not the verb).
GLOBAL_VALUES = ("-w", "--workspace", "-s", "--scope", "--state-folder")
#: Metavars whose value is a path (completed as files by the shells).
PATH_METAVARS = ("FILE", "DIR", "FOLDER", "REV|FILE", "DRAFT_FILE", "PREPARED_FILE")


class Spelling(Exception):
    """A mistyped verb or option, with the suggestion (a usage error, exit 2)."""


def verb_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Verb → its sub-parser, in the order the parser lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def the_verb(words: list[str]) -> str | None:
    """The first word of a command line that is not a global option or its value."""
    rest = iter(words)
    for word in rest:
        if word in GLOBAL_VALUES:
            next(rest, None)
        elif not word.startswith("-"):
            return word
    return None


def _nearest(word: str, known: list[str]) -> str | None:
    near = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return near[0] if near else None


def check_verb(parser: argparse.ArgumentParser, words: list[str]) -> None:
    """Refuse an unknown verb with the nearest known one."""
    verb = the_verb(words)
    verbs = list(verb_parsers(parser))
    if verb is None or verb in verbs:
        return
    near = _nearest(verb, verbs)
    hint = f"; did you mean '{near}'?" if near else ""
    raise Spelling(f"unknown verb '{verb}'{hint} ('handoff help' lists the verbs)")


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if a.help != argparse.SUPPRESS]


def check_extra(parser: argparse.ArgumentParser, verb: str | None, extra: list[str]) -> None:
    """Refuse the words the parser did not take, with the nearest option of the verb."""
    sub = verb_parsers(parser).get(verb or "")
    known = options_of(sub or parser)
    said = []
    for word in extra:
        name = word.split("=", 1)[0]
        near = _nearest(name, known) if name.startswith("-") else None
        said.append(f"'{word}'" + (f" (did you mean '{near}'?)" if near else ""))
    where = f"handoff {verb} --help" if sub else "handoff --help"
    raise Spelling(f"unrecognized arguments: {', '.join(said)} ('{where}' lists the options)")


def help_of(parser: argparse.ArgumentParser, topic: str | None) -> str:
    """``handoff help [VERB]``: the verb's help, or the parser's."""
    if topic is None:
        return parser.format_help()
    sub = verb_parsers(parser).get(topic)
    if sub is None:
        check_verb(parser, [topic])
    assert sub is not None
    return sub.format_help()


# -- completion scripts ----------------------------------------------------------


def _spec(parser: argparse.ArgumentParser) -> dict[str, dict]:
    """Per verb: its options, the options' choices, the options that take a path, and
    the choices of its first positional."""
    out: dict[str, dict] = {}
    for verb, sub in verb_parsers(parser).items():
        entry: dict = {"options": [], "choices": {}, "paths": [], "values": [], "positional": []}
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:
                continue
            if action.option_strings:
                entry["options"] += action.option_strings
                if action.nargs != 0:
                    entry["values"] += action.option_strings
                if action.choices:
                    for s in action.option_strings:
                        entry["choices"][s] = [str(c) for c in action.choices]
                elif str(action.metavar) in PATH_METAVARS:
                    entry["paths"] += action.option_strings
            elif action.choices and not entry["positional"]:
                entry["positional"] = [str(c) for c in action.choices]
        out[verb] = entry
    out["help"]["positional"] = list(out)
    return out


def _words(values: list[str]) -> str:
    return shlex.quote(" ".join(values))


def bash_script(parser: argparse.ArgumentParser) -> str:
    spec = _spec(parser)
    top = list(spec) + options_of(parser)
    lines = [
        '# handoff completion for bash: eval "$(handoff completion bash)"',
        "_handoff() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local verb="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in',
        f"            {'|'.join(GLOBAL_VALUES)}) ((i++)) ;;",
        "            -*) ;;",
        '            *) verb="${COMP_WORDS[i]}"; break ;;',
        "        esac",
        "    done",
        '    local opts="" choices="" paths="" values="" positional=""',
        '    case "$verb" in',
        f'        "") COMPREPLY=($(compgen -W {_words(top)} -- "$cur")); return ;;',
    ]
    for verb, entry in spec.items():
        lines.append(f"        {verb})")
        lines.append(f"            opts={_words(entry['options'])}")
        lines.append(f"            paths={_words(entry['paths'])}")
        lines.append(f"            values={_words(entry['values'])}")
        lines.append(f"            positional={_words(entry['positional'])}")
        if entry["choices"]:
            lines.append('            case "$prev" in')
            for option, choices in entry["choices"].items():
                lines.append(f"                {option}) choices={_words(choices)} ;;")
            lines.append("            esac")
        lines.append("            ;;")
    lines += [
        "        *) return ;;",
        "    esac",
        '    if [[ -n "$choices" ]]; then',
        '        COMPREPLY=($(compgen -W "$choices" -- "$cur")); return',
        "    fi",
        '    if [[ " $paths " == *" $prev "* ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur")); return',
        "    fi",
        '    if [[ " $values " == *" $prev "* ]]; then',
        "        COMPREPLY=(); return",
        "    fi",
        '    if [[ "$cur" == -* || -z "$positional" ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -W "$positional" -- "$cur"))',
        "    fi",
        "}",
        "complete -o default -F _handoff handoff",
    ]
    return "\n".join(lines) + "\n"


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """zsh runs the bash function through its ``bashcompinit``."""
    return (
        '# handoff completion for zsh: eval "$(handoff completion zsh)"\n'
        "autoload -U +X compinit && compinit\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser)
    )


def fish_script(parser: argparse.ArgumentParser) -> str:
    spec = _spec(parser)
    helps = _helps(parser)
    verbs = " ".join(spec)
    out = [
        "# handoff completion for fish: handoff completion fish | source",
        "complete -c handoff -f",
    ]
    for verb in spec:
        text = shlex.quote(helps.get(verb, ""))
        out.append(
            f"complete -c handoff -n 'not __fish_seen_subcommand_from {verbs}' -a {verb} -d {text}"
        )
    for verb, entry in spec.items():
        seen = f"-n '__fish_seen_subcommand_from {verb}'"
        if entry["positional"]:
            out.append(f"complete -c handoff {seen} -a {_words(entry['positional'])}")
        for option in entry["options"]:
            flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            extra = ""
            if option in entry["choices"]:
                extra = f" -x -a {_words(entry['choices'][option])}"
            elif option in entry["paths"]:
                extra = " -r -F"
            elif option in entry["values"]:
                extra = " -x"
            out.append(f"complete -c handoff {seen} {flag}{extra}")
    return "\n".join(out) + "\n"


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}
