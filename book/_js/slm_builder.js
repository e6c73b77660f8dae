/* The live "builder" explorer registers itself here with window.slmExplorers.register. */
