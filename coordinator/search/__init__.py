"""Rating search strategies (paper section G): pure functions over an experiment callable.

An experiment callable maps a thread count T to an Outcome. Strategies only ever
call it through a Memo, so no T is run twice in a rating (the paper cut 54
experiments to 40 unique this way) and a resumed rating replays finished
experiments from the record instead of running them.
"""
