"""Presenter mode: a lecturer's projector at 1024x768, read from the back of the room.

One switch, two ways in: the URL (``?present=1``, so a lecturer can bookmark it; ``?present=0`` turns it off)
and a toggle in the sidebar. The state is the plain session key ``presenter`` (it survives page switches; the
URL is kept in step with it). :func:`presenter` is called once per page by :func:`crowdlab.ui.frame.page_frame`.

In presenter mode the sidebar starts collapsed (its arrow brings the toggle back), the page's chrome shrinks, the
text grows, the numbers on the heatmaps' cells are drawn at 14 px, tab bars wrap instead of scrolling, and the
stepper (:func:`crowdlab.ui.lab.stepper`) puts its curves in a column beside the model's main panel so both are on
the first screen.
"""

from __future__ import annotations

import streamlit as st

from crowdlab.plots import common as plot_common

KEY = "presenter"  # plain key: presenter mode on or off
W_TOGGLE = "frame.presenter"  # the sidebar toggle (a view of KEY)
PARAM = "present"  # the URL query parameter
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")

# The CSS of presenter mode. Streamlit's own elements scale with the root font size; plotly draws SVG text with
# inline sizes, which an !important rule overrides (heatmap cell numbers and annotations, e.g. worker names).
CSS = """
<style>
html { font-size: 17px; }
[data-testid="stMainBlockContainer"] { padding: 2.75rem 1.25rem 2rem 1.25rem; max-width: 100%; }
/* the header (the folded sidebar's button) as tall as the page's top padding and opaque: the button stays in its
   strip and the page scrolls under it (a transparent header let the button float over the charts) */
[data-testid="stHeader"] { background: white; height: 2.75rem; min-height: 0; }
[data-testid="stMain"] h1 { font-size: 1.9rem; padding: 0 0 0.2rem 0; }
[data-testid="stMain"] h4 { font-size: 1.25rem; padding: 0.2rem 0; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 0.95rem; }
/* no text under 16 px (the figures' own sizes: crowdlab.plots.common.PRESENTER_PX): labels of widgets, buttons,
   tabs and expanders are 0.875rem (15 px) and code 0.75em in Streamlit; a formula's sub- and superscripts 0.7em */
.stApp [data-testid="stMarkdownContainer"] :is(p, li, strong, em, a, span:not(.katex *)),
.stApp :is(code, kbd, label, small), .stApp [data-testid="stFileUploaderDropzoneInstructions"] *,
.stApp [data-testid^="stSlider"], .stApp [data-testid="stMetricLabel"] *, .stApp [data-testid="stTooltipContent"] *,
.stApp [data-testid="stMultiSelectTagsContainer"] *
{ font-size: max(16px, 1em) !important; }
.stApp .katex .mtight:not(.sizing) { font-size: max(16px, 1em); }
/* the stepper's buttons and its speed in one row at 1024 px with their 16 px labels: narrower side padding */
[data-testid="stMain"] [data-testid="stButton"] button { padding-left: 0.5rem; padding-right: 0.5rem; }
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; overflow: visible; }
/* the stepper's position (crowdlab.ui.lab.position): its caption keeps two lines, so a shorter one after the
   first Step does not move the page up */
[class*="pos_block"] [data-testid="stCaptionContainer"] p { min-height: 2lh; }
</style>
"""


def is_on() -> bool:
    """Whether presenter mode is on (the plain key; nothing is drawn)."""
    return bool(st.session_state.get(KEY, False))


def _figures_is_on() -> bool:
    """:func:`is_on` for the figure builders (:func:`crowdlab.plots.common.min_font`), which also run outside a
    page (a script, a test): False there."""
    try:
        return is_on()
    except Exception:  # no Streamlit session
        return False


plot_common.presenter_source(_figures_is_on)  # the figures' presenter font size follows presenter mode


def from_url() -> bool:
    """Read ``?present=`` into the plain key (a value that is neither on nor off changes nothing); True when on.
    Called before the page config, which collapses the sidebar in presenter mode."""
    value = str(st.query_params.get(PARAM, "")).strip().lower()
    if value in ON:
        st.session_state[KEY] = True
    elif value in OFF:
        st.session_state[KEY] = False
    return is_on()


def _on_toggle() -> None:
    on = bool(st.session_state.get(W_TOGGLE))
    st.session_state[KEY] = on
    if on:
        st.query_params[PARAM] = "1"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def presenter() -> bool:
    """The sidebar toggle and, when on, the presenter CSS; keeps the URL in step (``?present=1``) so the address
    bar can be bookmarked. Returns whether presenter mode is on. Call inside ``with st.sidebar``."""
    on = is_on()
    st.session_state[W_TOGGLE] = on
    st.toggle(
        "Presenter mode",
        key=W_TOGGLE,
        on_change=_on_toggle,
        help="For a projector: larger text and numbers, no sidebar, the curves and the main picture on the first "
        "screen. Bookmark the page with ?present=1 in its address to open it this way.",
    )
    if on:
        if st.query_params.get(PARAM) not in ON:
            st.query_params[PARAM] = "1"
        st.html(CSS)
    return on


def intro(text: str) -> None:
    """A page's introduction (a caption); left out in presenter mode, where the lecturer says it."""
    if not is_on():
        st.caption(text)


def settings(summary: str, key: str | None = None, *, always: bool = False):
    """Where a page draws its settings: in place, or folded into an expander labelled ``summary`` in presenter
    mode (the stepper then starts higher on the screen). Use as ``with presenter.settings("..."):``. A summary
    that names the current choice changes with it: pass ``key`` so that the expander stays open while the
    lecturer changes the choice (without one, a new label is a new expander, folded). ``always``: folded in both
    modes (the Step page, whose curve and main picture are on the first screen in normal mode too)."""
    if not is_on() and not always:
        return st.container()
    return st.expander(summary, key=key) if key else st.expander(summary)
