class DFlashDraftModel:
    pass


class DFlashLagunaForCausalLM(DFlashDraftModel):
    pass


class MuseGlimmerAssistantModel(DFlashDraftModel):
    pass


EntryClass = [
    DFlashDraftModel,
    DFlashLagunaForCausalLM,
    MuseGlimmerAssistantModel,
]
