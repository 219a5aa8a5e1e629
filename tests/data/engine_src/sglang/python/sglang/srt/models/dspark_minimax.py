class DSparkMiniMaxDraftModel:
    pass


EntryClass = DSparkMiniMaxDraftModel
