# %% [markdown]
# Your own plot from recorded results: load the results store as pandas DataFrames with
# `bgbench.results.load` and draw what the report does not. Run it as a script
# (`python examples/custom_plot.py [RESULTS_DIR] [OUT.png]`) or cell by cell in an editor
# that understands `# %%` cells. The columns of every frame are documented in
# `bgbench.coordinator.storage.frames`.

# %%
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

from bgbench import results

where = sys.argv[1] if len(sys.argv) > 1 else "results"
out = sys.argv[2] if len(sys.argv) > 2 else "p99_against_throughput.png"
r = results.load(where)
r.ratings[["id", "store", "soar", "soar_low", "soar_high", "socialites"]]

# %% [markdown]
# The p99 response time against the throughput each experiment reached, one colour per
# rating: where the tail grows as a store approaches its SoAR.

# %%
rated = r.experiments[r.experiments["phase"].isin(["search", "final"])]
fig, ax = plt.subplots(figsize=(7, 4))
for rating_id, rows in rated.groupby("rating_id"):
    ax.scatter(rows["actions_per_s"], rows["p99_ms"], label=rating_id, s=12)
ax.set(xlabel="actions/s", ylabel="p99 ms", yscale="log", title="p99 against throughput")
ax.legend(fontsize=7)
fig.savefig(out, bbox_inches="tight")
print(f"wrote {out}")
