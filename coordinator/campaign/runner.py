"""Running a campaign: its jobs in order, each a rating through the rating API, recorded
with the campaign; resumed after a crash or Ctrl-C without re-running a finished rating.

A job that fails (bad settings, a store or infrastructure fault) is recorded with its
reason and the campaign goes on to the next job, or stops (on_failure: stop). An
interrupted rating is resumed through the rating API (`rate --resume`). Servers the
campaign started are stopped at its end, whatever ends it (servers.py); a job with a
scenario acts on its servers' nodes (their directories become its nodes.servers).
"""

import json
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from bgbench.coordinator.campaign import records
from bgbench.coordinator.campaign.language import Campaign, load_campaign
from bgbench.coordinator.campaign.records import JobRecord
from bgbench.coordinator.campaign.servers import Servers
from bgbench.coordinator.configuration.config import Settings, describe_validation_error
from bgbench.coordinator.configuration.redaction import REDACTED, redact_config
from bgbench.coordinator.rating import api
from bgbench.coordinator.rating.study import run_study
from bgbench.coordinator.records.events import (
    CampaignEnded,
    CampaignStarted,
    EventSink,
    JobStarting,
    Say,
    silent,
)
from bgbench.coordinator.records.faults import INTERRUPTED
from bgbench.coordinator.storage.location import Location, ResultsURL
from bgbench.coordinator.storage.results import ResultsStore
from bgbench.errors import SystemFault, UserError


@dataclass(frozen=True)
class CampaignOutcome:
    campaign_id: str
    status: str  # done | failed (stopped by on_failure: stop)
    results: Location  # the results store's file, or its URL
    jobs: list[JobRecord]

    @property
    def failed(self) -> list[JobRecord]:
        return [j for j in self.jobs if j.status == "failed"]


def run_campaign(
    campaign: Campaign | None,
    results_dir: Location,
    *,
    resume: str | None = None,
    on_failure: str | None = None,
    say: Say = silent,
    events: EventSink | None = None,
) -> CampaignOutcome:
    """Run `campaign` (or, with `resume`, the unfinished campaign of that id in the results
    store: `campaign` is then None) and return every job's outcome. `events` follows it live
    (coordinator/records/events.py): the campaign's start and end, its ratings' events between;
    lines for the user go to `say`. `results_dir` may be a PostgreSQL store's URL: the
    files beside the store (its servers' directories) then go under ./results."""
    url = results_dir if isinstance(results_dir, ResultsURL) else None
    work_dir = api.results_path(results_dir if isinstance(results_dir, Path) else Path("results"))
    if resume is None:
        _check_new(campaign)  # before the results store is made
    store = ResultsStore(work_dir, url)
    if resume is not None:
        campaign_id = resume
        row = records.campaign_row(store, campaign_id)
        if row["status"] in ("done", "failed"):
            raise UserError(
                f"campaign {campaign_id} is finished ({row['status']}): see bgbench campaign "
                f"show {campaign_id} --results {store.shown}"
            )
        campaign = _same_file(row)
        say(f"resuming campaign {campaign_id} ({row['name']})")
    else:
        assert campaign is not None  # _check_new
        campaign_id = records.new_campaign_id()
        records.start_campaign(store, campaign_id, campaign)
    policy = on_failure or (campaign.on_failure if campaign else "continue")
    say(f"campaign {campaign_id}: results in {store.path}")
    if events:
        events.emit(CampaignStarted(campaign_id, resume is not None))
    servers = Servers(work_dir / campaign_id / "servers", say)
    servers.adopt()
    status = "done"
    try:
        jobs = records.jobs(store, campaign_id)
        for job in jobs:
            if job.status in ("done", "failed"):
                continue
            if events:
                events.emit(JobStarting(campaign_id, job.seq, len(jobs), job.label))
            settings = _fresh_settings(campaign, job)
            outcome, message = _run_job(store, campaign_id, job, settings, servers, say, events)
            records.update_job(store, campaign_id, job.seq, status=outcome, message=message)
            if outcome == "failed":
                say(f"job {job.seq} failed: {message}")
                if policy == "stop":
                    status = "failed"
                    break
    except KeyboardInterrupt:
        records.finish_campaign(store, campaign_id, "interrupted", INTERRUPTED)
        if events:
            events.emit(CampaignEnded(campaign_id, "interrupted", INTERRUPTED))
        raise
    except BaseException as exc:
        records.finish_campaign(store, campaign_id, "interrupted", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        servers.stop_all()
    message = "stopped at the first failed job (on_failure: stop)" if status == "failed" else ""
    records.finish_campaign(store, campaign_id, status, message)
    if events:
        events.emit(CampaignEnded(campaign_id, status, message))
    return CampaignOutcome(campaign_id, status, store.path, records.jobs(store, campaign_id))


def _check_new(campaign: Campaign | None) -> None:
    if campaign is None:
        raise UserError("a new campaign needs its file")
    if campaign.invalid:
        first = campaign.invalid[0].error
        more = len(campaign.invalid) - 1
        also = f" (and {more} more invalid jobs: bgbench campaign check)" if more else ""
        raise UserError(first + also)


def _same_file(row: dict[str, str]) -> Campaign | None:
    """The campaign file again, when it still reads as recorded (its settings then carry
    the secrets the record redacted); None when it changed or is gone."""
    path = Path(row["file"])
    if not path.is_absolute():
        path = Path(row["cwd"]) / path
    try:
        campaign = load_campaign(path, check=False)  # the same text is all that matters
    except UserError:
        return None
    return campaign if records.same_text(campaign, row["file_text"]) else None


def _fresh_settings(campaign: Campaign | None, job: JobRecord) -> Settings:
    if campaign is not None and len(campaign.jobs) >= job.seq:
        settings = campaign.jobs[job.seq - 1].settings
        if settings is not None:
            return settings.model_copy(deep=True)
    if REDACTED in json.dumps(job.settings):
        raise UserError(
            f"job {job.seq} ({job.label}) was recorded with a secret redacted and its campaign "
            "file changed or is gone: restore the file to resume"
        )
    try:
        return Settings.model_validate(job.settings)
    except ValidationError as exc:
        raise UserError(describe_validation_error(exc)) from None


def _run_job(
    store: ResultsStore,
    campaign_id: str,
    job: JobRecord,
    settings: Settings,
    servers: Servers,
    say: Say,
    events: EventSink | None = None,
) -> tuple[str, str]:
    """Rate one job (or resume its interrupted rating); its outcome and why it failed."""
    try:
        servers.ensure(job.seq, job.specs)
        records.update_job(
            store, campaign_id, job.seq, status="running",
            servers=servers.described(job.seq, job.specs),
        )  # fmt: skip
        rating = _recorded_rating(store, job.rating_id)
        if rating is not None and rating["status"] == "done":
            record = api.rating_record(store, rating["id"])
        elif rating is not None and not job.study:
            record = api.rate(None, store, resume=rating["id"], say=say, events=events)
        else:  # a new rating, or a study (which cannot resume: it runs again, under a new id)
            options = servers.options(job.seq, job.specs)
            settings.store.options = {**options, **settings.store.options}
            if settings.scenario:  # the job's servers are the nodes its steps name
                started = [servers.root / servers.key(job.seq, spec) for spec in job.specs]
                settings.nodes.servers = [*started, *settings.nodes.servers]
            kept = None if job.study else job.rating_id  # named before a kill, never started
            rating_id = kept or api.new_rating_id()
            records.update_job(store, campaign_id, job.seq, status="running", rating_id=rating_id)
            if job.study:
                run_study(settings, job.study, rating_id, store.work_dir, say, store.url)
                record = api.rating_record(store, rating_id)
            else:
                write_document(settings, servers.root.parent / f"job-{job.seq}.yaml")
                record = api.rate(settings, store, say=say, rating_id=rating_id, events=events)
    except UserError as exc:
        return "failed", f"user error: {exc}"
    except SystemFault as exc:
        return "failed", f"infrastructure: {exc}"
    finally:
        servers.stop_fresh(job.seq, job.specs)
    if record.status == "done":
        return "done", ""
    return "failed", record.fault or record.status


def write_document(settings: Settings, path: Path) -> None:
    """The job's exact settings as a file `bgbench rate -c` takes (secrets redacted)."""
    data = redact_config(json.loads(settings.model_dump_json()))
    data.pop("results_dir", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# One job of a campaign, its settings resolved: bgbench rate -c THIS_FILE\n"
        + yaml.safe_dump(data, sort_keys=False)
    )


def _recorded_rating(store: ResultsStore, rating_id: str | None) -> dict[str, str] | None:
    if rating_id is None:
        return None
    try:
        return store.rating(rating_id)
    except UserError:  # killed between naming the rating and starting it
        return None
