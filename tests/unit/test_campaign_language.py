"""The campaign language: inheritance across templates and files, foreach and zip,
references and expressions, and errors that name the job, the field and the line."""

from pathlib import Path

import pytest

from bgbench.coordinator.campaign import load_campaign
from bgbench.errors import UserError
from bgbench.launchers import servers


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


BASE = """
templates:
  quick:
    sla: {delta_search_s: 2, delta_s: 4}
    rating: {objective: soar, max_threads: 64}
  slow:
    extends: quick
    sla: {delta_s: 30}
"""


def test_templates_extend_templates_across_files_and_children_override(tmp_path):
    write(tmp_path, "base.yaml", BASE)
    path = write(tmp_path, "c.yaml", """
campaign: inherit
include: base.yaml
templates:
  pg:
    extends: slow
    store: {name: postgres}
    rating: {max_threads: 16}
jobs:
  - extends: pg
""")  # fmt: skip
    campaign = load_campaign(path)
    (job,) = campaign.jobs
    assert job.error == ""
    s = job.settings
    assert s is not None
    assert s.store.name == "postgres"
    assert s.sla.delta_search_s == 2  # from quick, two levels up, in another file
    assert s.sla.delta_s == 30  # slow overrides quick
    assert s.rating.max_threads == 16  # pg overrides quick
    assert s.rating.objective == "soar"
    assert campaign.name == "inherit"
    assert "included" in campaign.text and "delta_search_s: 2" in campaign.text


def test_foreach_is_a_matrix_and_zip_takes_lists_together(tmp_path):
    path = write(tmp_path, "c.yaml", """
jobs:
  - foreach: {store: [sqlite, postgres], mix: [low, high, verylow]}
    store: {name: "${store}"}
    params: {mix: "${mix}"}
  - zip: {users: [1000, 2000], threads: [8, 16]}
    params: {usercount: "${users}"}
    rating: {max_threads: "${threads}"}
""")  # fmt: skip
    campaign = load_campaign(path)
    assert len(campaign.jobs) == 6 + 2
    pairs = [(j.settings.store.name, j.settings.bg.workload.mix) for j in campaign.jobs[:6]]
    assert pairs == [
        ("sqlite", "low"), ("sqlite", "high"), ("sqlite", "verylow"),
        ("postgres", "low"), ("postgres", "high"), ("postgres", "verylow"),
    ]  # fmt: skip
    zipped = [(j.settings.bg.database.usercount, j.settings.rating.max_threads)
              for j in campaign.jobs[6:]]  # fmt: skip
    assert zipped == [(1000, 8), (2000, 16)]  # typed: a whole ${...} keeps its type
    assert campaign.jobs[6].label == "users=1000 threads=8"
    assert campaign.varied == ["store", "mix", "users", "threads"]


def test_a_foreach_value_chooses_the_template_and_mapping_values_unfold(tmp_path):
    path = write(tmp_path, "c.yaml", BASE + """
  pg: {extends: quick, store: {name: postgres}, server: {kind: postgres, fresh: true}}
  lite: {extends: quick, store: {name: sqlite}}
jobs:
  - extends: ${store}
    foreach:
      store: [lite, pg]
      scale: [{agents: 1, users: 1000}, {agents: 2, users: 4000}]
    agents: {local: "${scale.agents}"}
    params: {usercount: "${scale.users}"}
""")  # fmt: skip
    jobs = load_campaign(path).jobs
    assert [(j.settings.store.name, j.settings.agents.local) for j in jobs] == [
        ("sqlite", 1),
        ("sqlite", 2),
        ("postgres", 1),
        ("postgres", 2),
    ]
    assert [s.kind for s in jobs[2].servers] == ["postgres"] and jobs[2].servers[0].fresh
    assert jobs[0].servers == []
    assert jobs[1].label == 'store=lite scale={"agents":2,"users":4000}'


def test_references_to_fields_and_expressions(tmp_path):
    path = write(tmp_path, "c.yaml", """
jobs:
  - foreach: {users: [1000, 5000]}
    bg: {database: {usercount: "${users}"}}
    rating:
      max_threads: "${= max(8, bg.database.usercount // 100)}"
      t0: "${= rating.max_threads // 4}"
    store: {name: sqlite, options: {path: "data/u${users}-z${bg.workload.zipfianmean}.db"}}
""")  # fmt: skip
    jobs = load_campaign(path).jobs
    assert [j.settings.rating.max_threads for j in jobs] == [10, 50]
    assert [j.settings.rating.t0 for j in jobs] == [2, 12]  # a reference to a computed field
    # a setting the document leaves unset is referred to at its default
    assert jobs[0].settings.store.options["path"] == "data/u1000-z0.27.db"


def test_an_invalid_job_names_its_foreach_values_the_field_and_the_line(tmp_path):
    path = write(tmp_path, "c.yaml", """
campaign: bad
jobs:
  - foreach: {t: [8, -1]}
    rating:
      max_threads: "${t}"
""")  # fmt: skip
    campaign = load_campaign(path)
    assert [j.error == "" for j in campaign.jobs] == [True, False]
    error = campaign.jobs[1].error
    assert error.startswith("job 2 (t=-1): rating.max_threads:"), error
    assert "(got -1)" in error and f"{path}:6" in error, error


def test_an_unknown_setting_is_named_with_the_template_line_it_came_from(tmp_path):
    path = write(tmp_path, "c.yaml", """
templates:
  quick:
    rating: {objective: soar}
    sla: {alpha_percent: 95}
jobs:
  - extends: quick
    name: one
""")  # fmt: skip
    (job,) = load_campaign(path).jobs
    assert "job 1 (one): sla.alpha_percent: unknown setting" in job.error, job.error
    assert f"{path}:5" in job.error, job.error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("jobs:\n  - extends: nope\n", "unknown template 'nope'"),
        (
            "templates:\n  a: {extends: b}\n  b: {extends: a}\njobs:\n  - extends: a\n",
            "templates extend in a circle: a -> b -> a",
        ),
        (
            "jobs:\n  - rating: {t0: '${rating.max_threads}', max_threads: '${rating.t0}'}\n",
            "refers in a circle",
        ),
        ("jobs:\n  - rating: {t0: '${nothing.here}'}\n", "names neither a foreach value"),
        ("jobs:\n  - rating: {t0: '${= 1 / 0}'}\n", "division by zero"),
        ("jobs:\n  - rating: {t0: '${= __import__(\"os\")}'}\n", "t0"),
        ("jobs:\n  - zip: {a: [1, 2], b: [1]}\n", "zip lists must have the same length"),
        ("jobs:\n  - foreach: {a: []}\n", "needs a non-empty list"),
        ("jobs: []\n", "non-empty list of jobs"),
        ("campaign: x\nrating: {}\njobs: [{}]\n", "unknown campaign key 'rating'"),
        ("jobs:\n  - server: {kind: postgres, size: 3}\n", "server is {kind: KIND"),
        ("include: [missing.yaml]\njobs: [{}]\n", "no campaign file"),
        ("jobs: [\n", "not valid YAML"),
    ],
)
def test_malformed_campaigns_are_one_line_errors_with_their_place(tmp_path, text, expected):
    path = write(tmp_path, "c.yaml", text)
    with pytest.raises(UserError) as info:
        load_campaign(path)
    message = str(info.value)
    assert expected in message, message
    assert "\n" not in message
    assert str(path) in message or "c.yaml" in message, message


def test_a_file_including_itself_is_refused(tmp_path):
    write(tmp_path, "a.yaml", "include: b.yaml\n")
    write(tmp_path, "b.yaml", "include: a.yaml\n")
    path = write(tmp_path, "c.yaml", "include: a.yaml\njobs: [{}]\n")
    with pytest.raises(UserError, match="includes itself"):
        load_campaign(path)


@pytest.mark.slow
def test_the_example_campaigns_unfold_into_valid_jobs():
    examples = sorted((Path(__file__).parents[2] / "examples" / "campaigns").glob("*.yaml"))
    assert examples, "examples/campaigns/ holds the paper figures as campaigns"
    for path in examples:
        campaign = load_campaign(path)
        assert campaign.jobs and not campaign.invalid, (path, [j.error for j in campaign.invalid])
        if "_fig" in path.name:  # a paper's figure opens with the one command that runs it
            lines = path.read_text().splitlines()
            opening = lines[: next(i for i, line in enumerate(lines) if not line.startswith("#"))]
            command = f"bgbench campaign run examples/campaigns/{path.name}"
            assert any(command in line for line in opening), (path, "opens without", command)


def test_an_option_the_jobs_server_gives_counts_in_the_check(tmp_path):
    """read_from: replica needs replica_dsn, which a postgres-replica server gives when it
    runs (not a single postgres): the check counts the options a server kind gives."""
    job = """
jobs:
  - name: reads
    server: {kind: KIND}
    store: {name: postgres, options: {read_from: replica}}
    sla: {delta_search_s: 2, delta_s: 4}
"""
    given = load_campaign(write(tmp_path, "r.yaml", job.replace("KIND", "postgres-replica")))
    assert given.jobs and not given.invalid, [j.error for j in given.invalid]
    single = load_campaign(write(tmp_path, "p.yaml", job.replace("KIND", "postgres")))
    assert [j.seq for j in single.invalid] == [1]
    assert "replica needs replica_dsn" in single.invalid[0].error
    assert set(servers.OPTIONS_GIVEN) == set(servers.kinds())  # every kind says what it gives


# -- bounds: what grows without end is refused as it is counted, never built ------------------


def test_a_file_included_ten_times_by_each_of_ten_files_is_refused_past_100_reads(tmp_path):
    write(tmp_path, "leaf.yaml", "templates: {t: {run: {seed: 1}}}\n")
    for level in range(1, 4):
        below = "leaf.yaml" if level == 1 else f"l{level - 1}.yaml"
        write(tmp_path, f"l{level}.yaml", f"include: [{', '.join([below] * 10)}]\n")
    path = write(tmp_path, "c.yaml", "include: l3.yaml\njobs: [{extends: t}]\n")
    with pytest.raises(UserError, match="at most 100 files"):
        load_campaign(path, check=False)


def test_templates_extending_ten_times_over_merge_once_each(tmp_path):
    lines = ["templates:", "  t0: {run: {seed: 7}}"]
    lines += [f"  t{i}: {{extends: [{', '.join([f't{i - 1}'] * 10)}]}}" for i in range(1, 30)]
    path = write(tmp_path, "c.yaml", "\n".join(lines) + "\njobs: [{extends: t29}]\n")
    (job,) = load_campaign(path, check=False).jobs  # 10^29 merges, were each repeated
    assert job.settings is not None and job.settings.run.seed == 7


def test_references_doubling_are_refused_as_they_grow(tmp_path):
    fields = ['        r0: "xxxxxxxxxx"'] + [
        f'        r{i}: "' + f"${{store.options.r{i - 1}}}" * 10 + '"' for i in range(1, 9)
    ]
    text = "jobs:\n  - store:\n      name: sqlite\n      options:\n" + "\n".join(fields) + "\n"
    with pytest.raises(UserError, match="longer than 1,000,000 characters"):
        load_campaign(write(tmp_path, "c.yaml", text), check=False)


def test_a_list_made_to_hold_itself_by_a_reference_is_refused(tmp_path):
    text = (
        "jobs:\n  - store:\n      name: sqlite\n      options:\n        l: ['${store.options.l}']\n"
    )
    with pytest.raises(UserError, match=r"store\.options\.l\.0: it contains itself"):
        load_campaign(write(tmp_path, "c.yaml", text), check=False)


def test_the_jobs_of_a_campaign_are_bounded_in_all(tmp_path):
    big = "[" + ", ".join(["'" + "x" * 1000 + "'"] * 90) + "]"
    text = f"jobs:\n  - store: {{name: model, options: {{big: {big}}}}}\n"
    text += "    foreach: {n: [" + ", ".join(str(i) for i in range(100)) + "]}\n"
    with pytest.raises(UserError, match="5,000,000 values and characters in all"):
        load_campaign(write(tmp_path, "c.yaml", text), check=False)
