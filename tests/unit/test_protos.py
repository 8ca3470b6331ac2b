from pathlib import Path

from bgbench.protos import generate

PROTOS = Path(generate.__file__).parent


def test_generated_modules_match_the_proto(tmp_path):
    generate.generate(tmp_path)
    for name in generate.OUTPUTS:
        assert (tmp_path / name).read_text() == (PROTOS / name).read_text(), (
            f"{name} is stale: run python -m bgbench.protos.generate"
        )
