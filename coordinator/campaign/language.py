"""The campaign language (Strudel's, section 6, in YAML): templates that extend one
another and other files' templates, jobs unfolded by `foreach` (a matrix) and `zip`
(lists taken together), references `${path}` to foreach values and to other fields, and
value expressions `${= expr}`. Each unfolded job is a full settings document validated
by the same model as `bgbench rate`.

    campaign: mixes                   # its name
    include: [common.yaml]            # templates of other files (which may include more)
    on_failure: continue              # or stop
    templates:
      quick: {sla: {delta_search_s: 2, delta_s: 4}, rating: {objective: soar}}
      postgres: {extends: quick, store: {name: postgres}, server: {kind: postgres}}
    jobs:
      - extends: ${store}             # a template chosen by a foreach value
        foreach: {store: [quick, postgres], mix: [low, high]}
        params: {mix: ${mix}}         # -p NAME=VALUE, paper names included
        rating: {max_threads: "${= bg.database.usercount // 100}"}
      - study: load                   # a workload's study (bgbench study) instead of a rating
        workload: {name: sensorlog}
"""

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from simpleeval import EvalWithCompoundTypes, InvalidExpression

from bgbench.coordinator.campaign.document import Located, Path_, read_yaml
from bgbench.coordinator.config import (
    Settings,
    apply_overrides,
    settings_model,
    workload_name,
)
from bgbench.coordinator.study import find_study
from bgbench.errors import UserError

TOP_KEYS = {"campaign", "description", "include", "on_failure", "templates", "jobs"}
JOB_KEYS = {"name", "extends", "foreach", "zip", "server", "params", "study"}  # not settings
SERVER_KEYS = {"kind", "fresh", "name"}
FAILURE_POLICIES = ("continue", "stop")
REFERENCE = re.compile(r"\$\{([^}]*)\}")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
FUNCTIONS = {"min": min, "max": max, "round": round, "int": int, "float": float, "abs": abs,
             "len": len, "str": str}  # fmt: skip


@dataclass(frozen=True)
class ServerSpec:
    """A server the campaign starts for a job through deploy/local/servers.py: one per job
    when `fresh`, else one shared by every job naming the same `name` (its kind by
    default) until the campaign ends."""

    kind: str
    fresh: bool = False
    name: str = ""

    @property
    def key(self) -> str:
        return self.name or self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "fresh": self.fresh, "name": self.name}


@dataclass
class Job:
    seq: int
    label: str  # its foreach values (and name), for tables and errors
    vars: dict[str, Any]
    document: dict[str, Any]  # the resolved settings document, params applied
    servers: list[ServerSpec]
    settings: Settings | None = None
    error: str = ""  # why it is invalid ("" when valid)
    study: str = ""  # a study of the workload's (bgbench study NAME) instead of a rating


@dataclass
class Campaign:
    name: str
    path: Path
    text: str  # the file's text, then each included file's
    on_failure: str
    jobs: list[Job] = field(default_factory=list)

    @property
    def invalid(self) -> list[Job]:
        return [j for j in self.jobs if j.error]

    @property
    def varied(self) -> list[str]:
        """The foreach names over all jobs, in first-seen order."""
        names: dict[str, None] = {}
        for job in self.jobs:
            names.update(dict.fromkeys(job.vars))
        return list(names)


def load_campaign(path: Path) -> Campaign:
    """Parse, unfold and validate a campaign file. A malformed file raises UserError; a
    job whose settings are invalid is kept, with its error (Campaign.invalid)."""
    root, text = read_yaml(path)
    for key in root.data:
        if key not in TOP_KEYS:
            raise UserError(
                f"{root.at((key,))}: unknown campaign key {key!r}; use "
                f"{', '.join(sorted(TOP_KEYS))}"
            )
    templates, texts = _templates(root, path, [path.resolve()])
    policy = root.data.get("on_failure", "continue")
    if policy not in FAILURE_POLICIES:
        raise UserError(f"{root.at(('on_failure',))}: on_failure must be continue or stop")
    entries = root.data.get("jobs")
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{path}: a campaign needs a non-empty list of jobs (jobs: [...])")
    campaign = Campaign(
        name=str(root.data.get("campaign") or path.stem),
        path=path,
        text=text + "".join(f"\n# --- included {p} ---\n{t}" for p, t in texts),
        on_failure=policy,
    )
    for i, entry in enumerate(entries):
        where = root.at(("jobs", str(i)))
        if not isinstance(entry, dict):
            raise UserError(f"{where}: a job is a mapping of settings")
        located = root.item("jobs", i)
        for values in _unfold(located, where):
            campaign.jobs.append(_job(len(campaign.jobs) + 1, located, values, templates))
    return campaign


# -- templates and inheritance ---------------------------------------------------------


def _templates(
    root: Located, path: Path, seen: list[Path]
) -> tuple[dict[str, Located], list[tuple[Path, str]]]:
    """Every template this file can extend (its includes' first, its own over them), and
    the included files' texts."""
    out: dict[str, Located] = {}
    texts: list[tuple[Path, str]] = []
    includes = root.data.get("include", [])
    if isinstance(includes, str):
        includes = [includes]
    for n, name in enumerate(includes):
        included = (path.parent / str(name)).resolve()
        if included in seen:
            raise UserError(f"{root.at(('include', str(n)))}: {name} includes itself")
        if not included.is_file():
            raise UserError(f"{root.at(('include', str(n)))}: no campaign file {included}")
        sub, text = read_yaml(included)
        inner, more = _templates(sub, included, [*seen, included])
        out.update(inner)
        texts += [(included, text), *more]
    own = root.data.get("templates", {})
    if not isinstance(own, dict):
        raise UserError(f"{root.at(('templates',))}: templates is a mapping of name: settings")
    block = root.sub("templates")
    for name in own:
        if not isinstance(own[name], dict):
            raise UserError(f"{block.at((name,))}: template {name} must be a mapping")
        out[name] = block.sub(name)
    return out, texts


def _resolve(name: str, templates: dict[str, Located], where: str, chain: list[str]) -> Located:
    """Template `name` with everything it extends merged under it."""
    if name not in templates:
        known = ", ".join(sorted(templates)) or "none defined"
        raise UserError(f"{where}: unknown template {name!r} (templates: {known})")
    if name in chain:
        raise UserError(f"{where}: templates extend in a circle: {' -> '.join([*chain, name])}")
    own = templates[name]
    base = Located({})
    for parent in _names(own.data.get("extends"), own.at(("extends",))):
        base = merge(base, _resolve(parent, templates, own.at(("extends",)), [*chain, name]))
    return merge(base, _without(own, {"extends"}))


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise UserError(f"{where}: extends names a template or a list of templates")


def merge(base: Located, over: Located) -> Located:
    """`over` on `base`: mappings merge key by key, anything else is replaced."""
    return Located(_merged(base.data, over.data), {**base.where, **over.where})


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _without(located: Located, keys: set[str]) -> Located:
    return Located({k: v for k, v in located.data.items() if k not in keys}, located.where)


# -- unfolding -------------------------------------------------------------------------


def _unfold(entry: Located, where: str) -> list[dict[str, Any]]:
    """The foreach values of each job an entry stands for: the product of its `foreach`
    lists, times its `zip` lists taken together."""
    matrix = _lists(entry, "foreach")
    zipped = _lists(entry, "zip")
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise UserError(f"{entry.at(('zip',)) or where}: zip lists must have the same length")
    rows: list[dict[str, Any]] = [{}]
    if zipped:
        columns = zip(*zipped.values(), strict=True)
        rows = [dict(zip(zipped, values, strict=True)) for values in columns]
    overlap = set(matrix) & set(zipped)
    if overlap:
        raise UserError(f"{entry.at(('zip',))}: {sorted(overlap)[0]} is in foreach and zip")
    product = [
        dict(zip(matrix, values, strict=True)) for values in itertools.product(*matrix.values())
    ]
    return [{**p, **r} for p in product for r in rows]


def _lists(entry: Located, key: str) -> dict[str, list[Any]]:
    value = entry.data.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{entry.at((key,))}: {key} maps names to lists of values")
    for name, values in value.items():
        if not isinstance(values, list) or not values:
            raise UserError(f"{entry.at((key, name))}: {key} {name} needs a non-empty list")
    return value


def label_of(values: dict[str, Any], name: str, seq: int) -> str:
    shown = " ".join(f"{k}={_compact(v)}" for k, v in values.items())
    return " ".join(x for x in (name, shown) if x) or f"job {seq}"


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


# -- one job ---------------------------------------------------------------------------


def _job(seq: int, entry: Located, values: dict[str, Any], templates: dict[str, Located]) -> Job:
    name = str(entry.data.get("name", ""))
    label = label_of(values, name, seq)
    context = label if label == f"job {seq}" else f"job {seq} ({label})"
    body = _without(entry, {"foreach", "zip"})
    parents = _names(
        _substitute_vars(body.data.get("extends"), values, body.at(("extends",)), context),
        body.at(("extends",)),
    )
    merged = Located({})
    for parent in parents:
        merged = merge(merged, _resolve(parent, templates, body.at(("extends",)), []))
    merged = merge(merged, _without(body, {"extends", "name"}))
    document = Resolver(merged, values, context).resolve()
    servers = _servers(document.pop("server", None), merged.at(("server",)), context)
    params = document.pop("params", {}) or {}
    study = str(document.pop("study", "") or "")
    document.pop("extends", None)
    if not isinstance(params, dict):
        raise UserError(f"{merged.at(('params',))}: {context}: params maps NAME to a value")
    job = Job(seq, label, values, document, servers, study=study)
    try:
        apply_overrides(document, list(params.items()))
        document.pop("results_dir", None)  # the campaign's results directory
        job.settings = Settings.model_validate(document)
        if study:
            find_study(job.settings.workload.name, study)
    except ValidationError as exc:
        job.error = describe(exc, merged, context)
    except UserError as exc:
        job.error = f"{context}: {exc}"
    return job


def describe(exc: ValidationError, merged: Located, context: str) -> str:
    """One line: the job, the field, what is wrong, and where it was set."""
    err = exc.errors()[0]
    loc = tuple(str(p) for p in err["loc"])
    if loc and loc[0].startswith("Settings_"):
        loc = loc[1:]
    msg = "unknown setting (check its spelling and section)"
    if err["type"] != "extra_forbidden":
        msg = err["msg"]
    given = err.get("input")
    shown = "" if isinstance(given, dict) or err["type"] == "missing" else f" (got {given!r})"
    where = merged.at(loc) or merged.at(("params",))
    place = f" (set at {where})" if where else ""
    more = f"; and {len(exc.errors()) - 1} more" if len(exc.errors()) > 1 else ""
    return f"{context}: {'.'.join(loc) or 'settings'}: {msg}{shown}{place}{more}"


def _servers(value: Any, where: str, context: str) -> list[ServerSpec]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, str):
            item = {"kind": item}
        if not isinstance(item, dict) or "kind" not in item or set(item) - SERVER_KEYS:
            raise UserError(
                f"{where}: {context}: server is {{kind: KIND, fresh: true|false, name: NAME}} "
                "or a list of them"
            )
        out.append(
            ServerSpec(str(item["kind"]), bool(item.get("fresh", False)), str(item.get("name", "")))
        )
    return out


def _substitute_vars(value: Any, values: dict[str, Any], where: str, context: str) -> Any:
    """`${name}` of foreach values only (what `extends` may use)."""
    if isinstance(value, list):
        return [_substitute_vars(v, values, where, context) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    return Resolver(Located({}), values, context).text(value, where)


class Resolver:
    """Replaces every `${...}` of a job's document: a foreach value, another field of the
    document (the settings' default when the document leaves it unset), or an expression
    over them. A reference to a field that is itself still a reference waits for it;
    references in a circle are an error."""

    def __init__(self, merged: Located, values: dict[str, Any], context: str) -> None:
        self.merged = merged
        self.document = json.loads(json.dumps(merged.data))  # a deep copy of plain data
        self.values = values
        self.context = context
        self._defaults: dict[str, Any] | None = None
        self.field = ""  # the field being resolved, for errors

    def resolve(self) -> dict[str, Any]:
        pending = [p for p, v in _leaves(self.document) if isinstance(v, str) and "${" in v]
        while pending:
            waiting = {".".join(p) for p in pending}
            progressed = []
            for path in pending:
                raw = _get(self.document, path)

                def blocked(ref: str, waiting: set[str] = waiting, path: Path_ = path) -> bool:
                    return any(
                        w == ref or w.startswith(ref + ".") or ref.startswith(w + ".")
                        for w in waiting - {".".join(path)}
                    )

                if any(blocked(r) for r in self._references(raw)):
                    continue
                self.field = ".".join(path) + ": "
                _set(self.document, path, self.text(raw, self.merged.at(path)))
                progressed.append(path)
            if not progressed:
                first = pending[0]
                raise UserError(
                    f"{self.merged.at(first)}: {self.context}: {'.'.join(first)} refers in a "
                    "circle (or to a field that refers back to it)"
                )
            pending = [p for p in pending if p not in progressed]
        return self.document  # type: ignore[no-any-return]

    def _references(self, raw: str) -> list[str]:
        refs = []
        for body in REFERENCE.findall(raw):
            text = body.strip()
            refs += DOTTED.findall(text[1:]) if text.startswith("=") else [text]
        return [r for r in refs if r.split(".")[0] not in self.values]

    def text(self, raw: str, where: str) -> Any:
        whole = REFERENCE.fullmatch(raw.strip())
        if whole:
            return self._value(whole.group(1), where)
        return REFERENCE.sub(lambda m: _compact(self._value(m.group(1), where)), raw)

    def _value(self, body: str, where: str) -> Any:
        body = body.strip()
        if body.startswith("="):
            return self._expression(body[1:].strip(), where)
        return self._lookup(body, where)

    def _lookup(self, dotted: str, where: str) -> Any:
        parts = dotted.split(".")
        if parts[0] in self.values:
            node: Any = self.values[parts[0]]
            rest = parts[1:]
        else:
            node, rest = self._merged_with_defaults(), parts
        for part in rest:
            if not isinstance(node, dict) or part not in node:
                raise UserError(
                    f"{where}: {self.context}: {self.field}${{{dotted}}} names neither a "
                    "foreach value nor a setting"
                )
            node = node[part]
        return node

    def _expression(self, text: str, where: str) -> Any:
        names = {**self._merged_with_defaults(), **self.values}
        evaluator = EvalWithCompoundTypes(names=names, functions=FUNCTIONS)
        try:
            return evaluator.eval(text)
        except (InvalidExpression, ArithmeticError, TypeError, ValueError, SyntaxError) as exc:
            raise UserError(f"{where}: {self.context}: {self.field}${{= {text}}}: {exc}") from None

    def _merged_with_defaults(self) -> dict[str, Any]:
        if self._defaults is None:
            try:
                model = settings_model(workload_name(self.document))
                self._defaults = model().model_dump(mode="json")
            except UserError:
                self._defaults = {}
        return _merged(self._defaults, self.document)


def _leaves(data: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    if isinstance(data, dict):
        return [x for k, v in data.items() for x in _leaves(v, (*path, str(k)))]
    if isinstance(data, list):
        return [x for i, v in enumerate(data) for x in _leaves(v, (*path, str(i)))]
    return [(path, data)]


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _set(data: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        data = data[int(part)] if isinstance(data, list) else data[part]
    if isinstance(data, list):
        data[int(path[-1])] = value
    else:
        data[path[-1]] = value
