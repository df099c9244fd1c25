"""Class: a live class session. Students label from their phones; EM finds out who was careless."""

from crowdlab.ui import page_frame
from crowdlab.ui.class_page import class_page

page_frame("Class", icon=":material/groups:")
class_page()
