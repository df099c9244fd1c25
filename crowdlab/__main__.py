import sys

from crowdlab.cli import main

sys.exit(main())
