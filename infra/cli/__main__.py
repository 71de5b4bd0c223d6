"""`python -m infra.cli`: the `agentfn` command without the installed console script."""

import sys

from infra.cli.commands import main

sys.exit(main())
