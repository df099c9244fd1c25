"""Live class sessions: the data-access module (:mod:`crowdlab.classroom.store`: SQLite by default, PostgreSQL by
URL, the only module with SQL) and what a class labels and learns (:mod:`crowdlab.classroom.items`: generated and
uploaded items, secret roles, the votes as ``Annotations``, the reveal). Uses analysis and below; a sibling of
:mod:`crowdlab.teaching` (neither imports the other); no figures and no Streamlit."""
