//! The pure planner: how many trials to request, whether the experiment is done, which trial is best.
