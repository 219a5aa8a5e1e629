from conversion.base import MmprojModel, ModelBase


class SpeechAudio(MmprojModel):
    pass


@ModelBase.register("SpeechForConditionalGeneration")
class SpeechMmprojModel(SpeechAudio):
    pass
