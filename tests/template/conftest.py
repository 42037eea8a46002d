"""wallet/ holds the files a user writes into a generated copy (test_wallet.py applies them):
its tests run in that copy, on its package, never here."""

collect_ignore = ["wallet"]
