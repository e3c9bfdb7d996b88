"""The ``seglog`` argument parser: global options in every position, "did you mean", lazy commands.

Three things argparse does not do on its own, in one light module (argparse, difflib and
importlib only, so ``seglog --version`` imports nothing of the engine):

* **Global options before or after the command.** ``--data-dir DIR``, ``--config FILE`` and
  ``--read-only`` (:data:`GLOBAL_OPTIONS`, one definition) are accepted on the top-level parser
  and on every command parser at every depth: ``seglog --data-dir D topics create T``,
  ``seglog topics create T --data-dir D`` and ``seglog topics --data-dir D create T`` mean the
  same. The copies on command parsers default to ``argparse.SUPPRESS``, so a command parser
  never overwrites a value given before it. ``--data-dir`` given in several places is the
  concatenation, outermost first; ``--config`` and ``--read-only`` given again later win, as
  a repeated option does. A command that defines one of these option strings itself keeps
  its own meaning there: after ``topics create``/``topics alter``, ``--config KEY=VALUE`` is a
  topic config as in ``kafka-topics.sh``, so a server.properties goes before the command.
  The copies are added to a command parser when it is about to parse (or show help), after
  the command's own options, so they are listed last and never collide.
* **"Did you mean".** An unknown option after a command prints *that command's* usage, the
  unknown option and the closest options of that command (:func:`suggestions`, difflib),
  status 2; a misspelled command or choice gets the closest valid one.
* **Lazy commands.** :meth:`Subcommands.add_lazy` registers a command by name, one-line help and
  module; the module is imported (and its ``register(subparsers)`` run) only when the command
  is chosen, or when :meth:`Subcommands.load_all` builds the whole tree (tests, the README
  check). ``seglog --help`` lists the lazy commands from their one-line help.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from seglog.cli.lock_wait import DEFAULT_LOCK_WAIT_MS, LOCK_WAIT_HELP, non_negative_ms

#: Each global option: its option string and ``add_argument`` keywords (top-level form).
GLOBAL_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "--data-dir",
        {
            "dest": "data_dirs",
            "action": "append",
            "default": [],
            "metavar": "DIR",
            "help": "a log directory root (log.dirs); repeat for several roots",
        },
    ),
    (
        "--config",
        {
            "dest": "server_config",
            "default": None,
            "metavar": "FILE",
            "help": "a broker server.properties: its log.dirs/log.dir and storage defaults "
            "apply (--data-dir replaces its log.dirs)",
        },
    ),
    (
        "--read-only",
        {
            "action": "store_true",
            "help": "kept for scripts: commands that only read never lock or write anyway; "
            "commands that change data refuse it",
        },
    ),
    (
        "--lock-wait-ms",
        {
            "dest": "lock_wait_ms",
            "type": non_negative_ms,
            "default": DEFAULT_LOCK_WAIT_MS,
            "metavar": "MS",
            "help": LOCK_WAIT_HELP,
        },
    ),
)
#: Destinations whose values given at several depths are concatenated, not replaced.
CONCATENATED_DESTS = frozenset({"data_dirs"})
TOP_LEVEL_GROUP = "log directories (for every command that opens them)"
COMMAND_GROUP = "global options (also accepted before the command)"
MAX_SUGGESTIONS = 3
SUGGESTION_CUTOFF = 0.6


def add_global_options(parser: argparse.ArgumentParser, *, top_level: bool = True) -> None:
    """Add :data:`GLOBAL_OPTIONS` to ``parser``; on a command parser (``top_level=False``) with
    ``default=SUPPRESS`` and without the option strings the command already defines."""
    title = TOP_LEVEL_GROUP if top_level else COMMAND_GROUP
    taken = set(parser._option_string_actions)
    options = [(flag, kw) for flag, kw in GLOBAL_OPTIONS if top_level or flag not in taken]
    if not options:
        return
    group = parser.add_argument_group(title)
    for flag, keywords in options:
        copy = keywords if top_level else {**keywords, "default": argparse.SUPPRESS}
        group.add_argument(flag, **copy)


def suggestions(word: str, candidates: Sequence[str]) -> list[str]:
    """The candidates closest to ``word`` (at most :data:`MAX_SUGGESTIONS`, best first)."""
    return difflib.get_close_matches(word, candidates, n=MAX_SUGGESTIONS, cutoff=SUGGESTION_CUTOFF)


def _did_you_mean(words: Sequence[str]) -> str:
    quoted = [repr(word) if not word.startswith("-") else word for word in words]
    if not quoted:
        return ""
    if len(quoted) == 1:
        return f" (did you mean {quoted[0]}?)"
    return f" (did you mean {', '.join(quoted[:-1])} or {quoted[-1]}?)"


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors suggest the closest option, command or choice.

    Every parser of the ``seglog`` tree is one (``add_subparsers`` gives children the parent's
    class) and every ``add_subparsers`` makes a :class:`Subcommands`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)
        #: Set by :class:`Subcommands` on the parsers it makes: they get the global options.
        self.is_command = False
        self._global_options_added = False
        self._arg_strings: list[str] = []
        self._invalid_value: str | None = None

    def add_command_global_options(self) -> None:
        """Add the global options to this command parser (once; after its own options)."""
        if self.is_command and not self._global_options_added:
            self._global_options_added = True
            add_global_options(self, top_level=False)

    def format_help(self) -> str:
        self.add_command_global_options()
        return super().format_help()

    def format_usage(self) -> str:
        self.add_command_global_options()
        return super().format_usage()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._arg_strings = list(sys.argv[1:] if args is None else args)
        self._invalid_value = None
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.unrecognized(extras)
        return parsed

    def error(self, message: str) -> NoReturn:
        """argparse's usage error, unless an unknown option explains it better.

        ``topics create T --partitons 2`` fails "--partitions is required" and
        ``seglog --data-dri D topics list`` fails "invalid command: 'D'" in argparse; the cause
        is the misspelled option, so that is what is reported (with its suggestions).
        """
        tokens = self._arg_strings
        if self._invalid_value is not None and self._invalid_value in tokens:
            tokens = tokens[: tokens.index(self._invalid_value)]
        elif not message.startswith("the following arguments are required"):
            tokens = []
        if "--" in tokens:
            tokens = tokens[: tokens.index("--")]
        unknown = [token for token in tokens if self._is_unknown_option(token)]
        if unknown:
            self.unrecognized(unknown)
        super().error(message)

    def _is_unknown_option(self, token: str) -> bool:
        if not token.startswith("-") or token == "-" or self._negative_number_matcher.match(token):
            return False
        name = token.split("=", 1)[0]
        options = self._option_string_actions
        if name in options or (len(name) > 2 and name[1] != "-" and name[:2] in options):
            return False  # an option, or a short option with its value attached (-p0)
        return not (self.allow_abbrev and any(option.startswith(name) for option in options))

    def known_options(self) -> list[str]:
        """The long and short option strings this parser accepts."""
        return [flag for action in self._actions for flag in action.option_strings]

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """Exit 2 with this parser's usage, each unknown option and its closest known ones."""
        known = self.known_options()
        parts = []
        for word in extras:
            hint = ""
            if word.startswith("-") and len(word) > 1:
                hint = _did_you_mean(suggestions(word.split("=", 1)[0], known))
            parts.append(word + hint)
        super().error("unrecognized arguments: " + " ".join(parts))

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            self._invalid_value = str(value)
            choices = [str(choice) for choice in action.choices]
            close = suggestions(str(value), choices)[:1]
            hint = f"did you mean {close[0]!r}? " if close else ""
            kind = "command" if isinstance(action, Subcommands) else "choice"
            raise argparse.ArgumentError(
                action,
                f"invalid {kind}: {value!r} ({hint}choose from "
                + ", ".join(repr(choice) for choice in choices)
                + ")",
            )
        super()._check_value(action, value)


if TYPE_CHECKING:
    _SubParsersBase = argparse._SubParsersAction[CommandParser]
else:
    _SubParsersBase = argparse._SubParsersAction


class Subcommands(_SubParsersBase):
    """The subcommands of a :class:`CommandParser`: lazily loaded, global options merged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Command name -> module providing ``register(subparsers)``, until it is loaded.
        self._lazy: dict[str, str] = {}
        #: Called on every parser a lazy module adds (main.py: the terminal help formatter).
        self.on_load: list[Callable[[CommandParser], None]] = []
        self._added: list[CommandParser] = []

    def add_parser(self, name: str, **kwargs: Any) -> CommandParser:
        """argparse's ``add_parser``; the parser made is a command parser (global options).

        A module registering a lazy command replaces its stub, keeping its place in the list.
        """
        place = None
        if name in self._lazy:
            del self._lazy[name]
            place = [a.dest for a in self._choices_actions].index(name)
            del self._choices_actions[place]
            del self._name_parser_map[name]
        parser: CommandParser = super().add_parser(name, **kwargs)
        if place is not None and len(self._choices_actions) > place:
            self._choices_actions.insert(place, self._choices_actions.pop())
        parser.is_command = True
        self._added.append(parser)
        return parser

    def add_lazy(self, name: str, module: str, help: str) -> None:
        """Register command ``name``, listed with ``help``; ``module`` is imported when chosen."""
        self.add_parser(name, help=help)
        self._lazy[name] = module

    def load(self, name: str) -> None:
        """Import the module of lazy command ``name`` and let it register its parsers."""
        module = self._lazy.get(name)
        if module is None:
            return
        self._added.clear()
        importlib.import_module(module).register(self)
        if name in self._lazy:
            raise RuntimeError(f"{module}.register() did not add the command {name!r}")
        for parser in self._added:
            for hook in self.on_load:
                hook(parser)

    def load_all(self) -> None:
        """Load every lazy command, and theirs (the whole parser tree)."""
        for name in list(self._lazy):
            self.load(name)
        for parser in self._name_parser_map.values():
            parser.add_command_global_options()
            for action in parser._actions:
                if isinstance(action, Subcommands):
                    action.load_all()

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name, *arg_strings = values
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        self.load(name)
        command: CommandParser = self._name_parser_map[name]
        command.add_command_global_options()
        sub_namespace, extras = command.parse_known_args(arg_strings, None)
        for key, value in vars(sub_namespace).items():
            before = getattr(namespace, key, None)
            if key in CONCATENATED_DESTS and isinstance(before, list):
                setattr(namespace, key, [*before, *value])
            else:
                setattr(namespace, key, value)
        if extras:
            command.unrecognized(extras)
