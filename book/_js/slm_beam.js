/* The live "beam" explorer registers itself here with window.slmExplorers.register. */
