"""Every chart's Plotly template, trimmed for the wire (issue 26, section 2: smaller figure JSON, no repeated
templates).

Streamlit makes its own template ("streamlit") Plotly's default when it is imported, and every figure then carries
it: 3.7 kB of colour placeholders for eleven trace types (candlesticks, sankeys, tables, ...), which its front end
swaps for the theme's colours. That was 40 % of a Step click's figures (three figures, 39 kB a click on bluebirds).
crowdlab's figures set their own colours and colour scales (:mod:`crowdlab.plots.common`), so only two parts of it
ever apply: the colourway (the colour of a trace that names none) and the scatter markers' borderless outline.
:func:`use_light_template` makes a template of just those the default: the same look, 0.2 kB a figure.
"""

from __future__ import annotations

LIGHT = "crowdlab"


def use_light_template() -> None:
    """Make :data:`LIGHT` (Streamlit's colourway and scatter defaults, nothing else) Plotly's default template.
    Idempotent; a no-op when Streamlit's template is not registered (plotly without Streamlit)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if LIGHT in pio.templates and pio.templates.default == LIGHT:
        return
    if "streamlit" not in pio.templates:
        return
    full = pio.templates["streamlit"]
    light = go.layout.Template(layout=dict(colorway=full.layout.colorway))
    light.data.scatter = full.data.scatter
    pio.templates[LIGHT] = light
    pio.templates.default = LIGHT
