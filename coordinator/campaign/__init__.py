"""Campaigns: ratings of stores x workloads x settings, unfolded from one file (language.py),
run and recorded together, resumable (runner.py), with servers started per job (servers.py)."""

from bgbench.coordinator.campaign.document import ServerSpec
from bgbench.coordinator.campaign.language import Campaign, Job, load_campaign
from bgbench.coordinator.campaign.runner import CampaignOutcome, run_campaign

__all__ = ["Campaign", "CampaignOutcome", "Job", "ServerSpec", "load_campaign", "run_campaign"]
