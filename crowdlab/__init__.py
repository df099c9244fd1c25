"""crowdlab: a laboratory for the EM algorithm on crowd labels."""

from crowdlab.data import Annotations
from crowdlab.errors import DataError

__all__ = ["Annotations", "DataError"]
__version__ = "0.1.0"
