"""One entity's story: collected from the stores, the execution history and the function logs
(`collect`), rendered as terminal text (`text`), JSON (`Story.to_dict`) or an HTML picture (`html`)."""
