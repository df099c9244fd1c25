"""Join: the student's page of a live class, built for a phone (no sidebar, large buttons)."""

from crowdlab.ui.student_page import student_page

student_page()
