"""(being written)"""

EXPERIMENTS = ()
