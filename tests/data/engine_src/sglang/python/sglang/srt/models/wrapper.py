class VersionFour:
    def set_dflash_layers_to_capture(self, layer_ids):
        pass


class Wrapper:
    def __getattr__(self, name):
        return getattr(self.inner, name)


class VersionFourForConditionalGeneration(Wrapper):
    pass


class Plain:
    pass


EntryClass = [Wrapper, VersionFourForConditionalGeneration, Plain]
