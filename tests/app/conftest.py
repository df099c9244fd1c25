"""AppTest runs read the project's ``.streamlit/config.toml``, whose ``client.showErrorDetails = "none"`` hides an
exception's message from a visitor; in these tests the message is what a failing assertion should show, so it is
turned back on here (tests/unit/test_server_config.py checks the visitor's side)."""

from streamlit import config

config.set_option("client.showErrorDetails", "full")
