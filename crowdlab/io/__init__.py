"""The data layer: readers, the data model (:class:`~crowdlab.io.annotations.Annotations`), limits, escaping, the
bundled samples, item features and graphs, and the metrics that score labels against gold. Imports nothing above
it."""
