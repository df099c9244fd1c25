"""A lecture plan with the app: the guided lesson's stops, each with the button to press and what the class will
see, its numbers computed here on the very runs the app will show.

Run it before the lecture, print it or keep it beside the projector, then start the app
(``python3 dev.py app``, or ``crowdlab app``) and open the Lessons page in presenter mode
(http://127.0.0.1:8501/Lessons?present=1). A lesson is data (``crowdlab.teaching.lessons``): the app's Lessons page
and this script fold the same actions over the same seeded runs, so the numbers below are the ones on the screen.

    python examples/lecture_plan.py                     # the EM lecture (bad annotators, Dawid-Skene, traps)
    python examples/lecture_plan.py --lesson trust      # another lesson; --list names them all
    python examples/lecture_plan.py --markdown plan.md  # also write the plan as Markdown

CI runs the default (tests/unit/test_docs.py).
"""

# %% [markdown]
# ## The lessons and their steps

# %%
from __future__ import annotations

import argparse
import re
from pathlib import Path

from crowdlab.teaching import lessons

APP = "http://127.0.0.1:8501"


def plain(markdown: str) -> str:
    """Outcome text for a terminal: bold markers, LaTeX dollars and backslashes dropped (\\mu_i -> mu_i)."""
    return re.sub(r"\*\*|\$|\\(?=[A-Za-z])", "", markdown)


# %% [markdown]
# ## Fold the actions, as the app does, and write down each outcome


# %%
def plan(key: str) -> list[str]:
    lesson = lessons.LESSONS[key]
    ref = lessons.reference(key)
    lines = [
        f"# Lecture plan: {lesson.title}",
        "",
        f"{lesson.summary}",
        "",
        f"Open {APP}/Lessons?present=1, choose this lesson, and press each step's button in turn"
        " (a clicker's → moves on).",
        "",
    ]
    run = None
    for i, step in enumerate(lesson.steps, 1):
        before = lessons.facts(run)
        run = lessons.apply(run, step.action)
        outcome = lessons.fill(step.outcome, before, lessons.facts(run), ref)
        lines += [
            f"## {i}. {step.title}",
            "",
            f"- press **{step.button}** (action `{step.action}`); the chart: {step.chart}",
            f"- the class sees: {plain(outcome)}",
            "",
        ]
    lines += [
        "## Afterwards",
        "",
        f"- Step through EM ({APP}/Step_through_EM) on the same data: E-step and M-step by hand, the Formulas tab.",
        f"- Compare methods ({APP}/Compare_methods): every model against gold.",
        f"- A live class ({APP}/Class): the students become the crowd.",
    ]
    return lines


def main(argv: list[str] | None = None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lesson", default="em", choices=sorted(lessons.LESSONS), help="which lesson (default: em)")
    ap.add_argument("--list", action="store_true", help="list the lessons and stop")
    ap.add_argument("--markdown", type=Path, help="also write the plan to this Markdown file")
    args = ap.parse_args(argv)
    if args.list:
        for key, lesson in lessons.LESSONS.items():
            print(f"{key:10} {lesson.title} ({len(lesson.steps)} steps)")
        return []
    lines = plan(args.lesson)
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


if __name__ == "__main__":
    main()
