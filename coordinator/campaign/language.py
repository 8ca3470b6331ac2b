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
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bgbench.coordinator.campaign.checks import job_problem
from bgbench.coordinator.campaign.document import Located, ServerSpec, merge_data, read_yaml
from bgbench.coordinator.campaign.expressions import Sizes
from bgbench.coordinator.campaign.references import Resolver, compact
from bgbench.coordinator.configuration.config import (
    Settings,
    apply_overrides,
)
from bgbench.coordinator.configuration.scenario import SCENARIO_ERROR
from bgbench.coordinator.configuration.settings_files import TEXT_LIMIT, shown
from bgbench.coordinator.rating.study import find_study
from bgbench.errors import UserError

TOP_KEYS = {"campaign", "description", "include", "on_failure", "templates", "jobs"}
JOB_KEYS = {"name", "extends", "foreach", "zip", "server", "params", "study"}  # not settings
SERVER_KEYS = {"kind", "fresh", "name"}
FAILURE_POLICIES = ("continue", "stop")
MAX_JOBS = 10_000  # jobs a campaign unfolds to, counted before any is built
MAX_UNFOLDED = 5_000_000  # values and characters of all its jobs' documents
MAX_INCLUDES = 100  # files a campaign includes, in all (a file included twice counts twice)


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


def load_campaign(path: Path, check: bool = True) -> Campaign:
    """Parse, unfold and validate a campaign file. A malformed file raises UserError; a
    job whose settings are invalid, or that `rate` would refuse at its start (`check`:
    store options, layout, server kinds), is kept, with its error (Campaign.invalid)."""
    root, text = read_yaml(path)
    for key in root.data:
        if key not in TOP_KEYS:
            raise UserError(
                f"{root.at((key,))}: unknown campaign key {key!r}; use "
                f"{', '.join(sorted(TOP_KEYS))}"
            )
    defined, texts = _templates(root, path, [path.resolve()], [0, 0])
    templates = Templates(defined)
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
    unfolded = 0  # values of every job's document
    for i, entry in enumerate(entries):
        where = root.at(("jobs", str(i)))
        if not isinstance(entry, dict):
            raise UserError(f"{where}: a job is a mapping of settings")
        located = root.item("jobs", i)
        for values in _unfold(located, where, MAX_JOBS - len(campaign.jobs)):
            job = _job(len(campaign.jobs) + 1, located, values, templates, check)
            campaign.jobs.append(job)
            unfolded += Sizes(MAX_UNFOLDED).of(job.document)
            if unfolded > MAX_UNFOLDED:
                raise UserError(
                    f"{where}: the campaign's first {len(campaign.jobs):,} jobs hold more than "
                    f"{MAX_UNFOLDED:,} values and characters in all"
                )
    return campaign


# -- templates and inheritance ---------------------------------------------------------


def _templates(
    root: Located, path: Path, seen: list[Path], reads: list[int]
) -> tuple[dict[str, Located], list[tuple[Path, str]]]:
    """Every template this file can extend (its includes' first, its own over them), and
    the included files' texts. `reads` counts the files read and their characters, in all:
    a file included ten times by each of ten files ... would be read without end."""
    out: dict[str, Located] = {}
    texts: list[tuple[Path, str]] = []
    includes = root.data.get("include", [])
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list):
        raise UserError(f"{root.at(('include',))}: include names a file or a list of files")
    for n, name in enumerate(includes):
        included = (path.parent / str(name)).resolve()
        if included in seen:
            raise UserError(f"{root.at(('include', str(n)))}: {shown(name)} includes itself")
        reads[0] += 1
        if reads[0] > MAX_INCLUDES:
            raise UserError(
                f"{root.at(('include', str(n)))}: a campaign includes at most {MAX_INCLUDES} "
                "files in all"
            )
        if not included.is_file():
            raise UserError(f"{root.at(('include', str(n)))}: no campaign file {included}")
        sub, text = read_yaml(included)
        reads[1] += len(text)
        if reads[1] > TEXT_LIMIT:
            raise UserError(
                f"{root.at(('include', str(n)))}: a campaign's included files hold at most "
                f"{TEXT_LIMIT:,} characters in all"
            )
        inner, more = _templates(sub, included, [*seen, included], reads)
        out.update(inner)
        texts += [(included, text), *more]
    own = root.data.get("templates", {})
    if not isinstance(own, dict):
        raise UserError(f"{root.at(('templates',))}: templates is a mapping of name: settings")
    block = root.sub("templates")
    for name in own:
        if not isinstance(own[name], dict):
            raise UserError(f"{block.at((name,))}: template {shown(name)} must be a mapping")
        out[name] = block.sub(name)
    return out, texts


@dataclass
class Templates:
    """The templates a campaign's jobs can extend, and each one merged with what it
    extends, once (ten templates each extending ten ... would merge without end)."""

    defined: dict[str, Located]
    resolved: dict[str, Located] = field(default_factory=dict)


def _resolve(name: str, templates: Templates, where: str, chain: list[str]) -> Located:
    """Template `name` with everything it extends merged under it."""
    if name in templates.resolved:
        return templates.resolved[name]
    if name not in templates.defined:
        known = ", ".join(sorted(templates.defined)) or "none defined"
        raise UserError(f"{where}: unknown template {name!r} (templates: {known})")
    if name in chain:
        raise UserError(f"{where}: templates extend in a circle: {' -> '.join([*chain, name])}")
    own = templates.defined[name]
    base = Located({})
    for parent in _names(own.data.get("extends"), own.at(("extends",))):
        base = merge(base, _resolve(parent, templates, own.at(("extends",)), [*chain, name]))
    templates.resolved[name] = merge(base, _without(own, {"extends"}))
    return templates.resolved[name]


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        # A template named twice merges as if named once, at its last place (its fields win
        # either way): a list of one name repeated would otherwise merge it without end.
        return list(dict.fromkeys(reversed(value)))[::-1]
    raise UserError(f"{where}: extends names a template or a list of templates")


def merge(base: Located, over: Located) -> Located:
    """`over` on `base`: mappings merge key by key, anything else is replaced."""
    return Located(merge_data(base.data, over.data), {**base.where, **over.where})


def _without(located: Located, keys: set[str]) -> Located:
    return Located({k: v for k, v in located.data.items() if k not in keys}, located.where)


# -- unfolding -------------------------------------------------------------------------


def _unfold(entry: Located, where: str, room: int) -> list[dict[str, Any]]:
    """The foreach values of each job an entry stands for: the product of its `foreach`
    lists, times its `zip` lists taken together; counted first, refused past `room`."""
    matrix = _lists(entry, "foreach")
    zipped = _lists(entry, "zip")
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise UserError(f"{entry.at(('zip',)) or where}: zip lists must have the same length")
    count = math.prod([len(v) for v in matrix.values()] + list(lengths)[:1])
    if count > room:
        before = f" after {MAX_JOBS - room:,} before it" if room < MAX_JOBS else ""
        raise UserError(
            f"{entry.at(('foreach',)) or where}: this job unfolds to {count:,} jobs{before}; "
            f"a campaign runs at most {MAX_JOBS:,}"
        )
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
    pairs = " ".join(f"{shown(k)}={shown(compact(v))}" for k, v in values.items())
    return " ".join(x for x in (shown(name) if name else "", pairs) if x) or f"job {seq}"


# -- one job ---------------------------------------------------------------------------


def _job(
    seq: int, entry: Located, values: dict[str, Any], templates: Templates, check: bool
) -> Job:
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
        problem = job_problem(job.settings, study, servers, merged) if check else ""
        if problem:
            job.error = f"{context}: {problem}"
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
    more = f"; and {len(exc.errors()) - 1} more" if len(exc.errors()) > 1 else ""
    if err["type"] == SCENARIO_ERROR:  # the line names the step itself
        step = (err.get("ctx") or {}).get("step")
        where = merged.at((*loc, str(step)) if step is not None else loc)
        return f"{context}: {err['msg']}{f' (set at {where})' if where else ''}{more}"
    msg = "unknown setting (check its spelling and section)"
    if err["type"] != "extra_forbidden":
        msg = err["msg"]
    given = err.get("input")
    got = "" if isinstance(given, dict) or err["type"] == "missing" else f" (got {given!r})"
    where = merged.at(loc) or merged.at(("params",))
    place = f" (set at {where})" if where else ""
    field = ".".join(shown(p) for p in loc) or "settings"
    return f"{context}: {field}: {msg}{got}{place}{more}"


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
