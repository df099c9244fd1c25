"""What a fitted run says: worker reports, error rates without labels and Fisher information, comparisons,
prior and start sweeps, likelihood surfaces, and the exports. Uses the engines, models and data layers only."""
