"""What a campaign checks of each valid job before anything runs: what `rate` (or `study`)
would check at its start, and that the servers it names are ones the campaign can start;
a job that fails either is invalid in `campaign check`, not a failed job of `campaign run`."""

from __future__ import annotations

from bgbench.coordinator.campaign.document import Located, ServerSpec
from bgbench.coordinator.campaign.servers import check_kinds
from bgbench.coordinator.configuration.config import Settings
from bgbench.coordinator.configuration.scenario import ScenarioMistake
from bgbench.coordinator.execution.checkconfig import check_settings
from bgbench.coordinator.execution.target_kinds import target_kind
from bgbench.errors import UserError
from bgbench.launchers import servers as launchers

SECTIONS = ("store", "scenario", "nodes")  # a check's line that names one: placed at it


def job_problem(settings: Settings, study: str, servers: list[ServerSpec], merged: Located) -> str:
    """Why the job cannot run ("" when it can), in one line with the place that set it."""
    try:
        check_kinds(servers)
    except UserError as exc:
        return _placed(str(exc), merged.at(("server",)))
    copy = settings.model_copy(deep=True)  # checking makes its layout concrete
    given = [launchers.OPTIONS_GIVEN.get(spec.kind, {}) for spec in servers]
    copy.store.options = {**{k: v for g in given for k, v in g.items()}, **copy.store.options}
    try:
        if study:
            target_kind(copy).check_store(copy)
            if copy.scenario:
                raise UserError(
                    "scenario: a study runs no rated experiments: a scenario applies to "
                    "ratings (remove study or scenario)"
                )
        else:
            check_settings(copy, [spec.kind for spec in servers])
    except ScenarioMistake as exc:
        return _placed(str(exc), merged.at(("scenario", str(exc.step))))
    except UserError as exc:
        message = str(exc).removeprefix("invalid config: ")
        named = [section for section in SECTIONS if message.startswith(section)]
        return _placed(message, merged.at((named[0],)) if named else "")
    return ""


def _placed(message: str, where: str) -> str:
    return f"{message} (set at {where})" if where else message
