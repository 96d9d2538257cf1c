// Which projections a replay can run: this build's current ones by name, and, for
// --use-recorded, older projector versions the build still carries. Tests (and later a
// build that keeps old projectors around) pass their own catalogue.
import type { Projection } from '../projector/projection.js';
import { projectionNamed } from '../projector/registry.js';

export interface ProjectionCatalog {
  /** This build's projection of that name, if it has one. */
  current(name: string): Projection<unknown> | undefined;
  /** The projection of that name at exactly that projector_version, if this build carries it. */
  recorded(name: string, projectorVersion: string): Projection<unknown> | undefined;
}

/** This build: the projector registry, which holds one (the current) version of each projection. */
export const BUILD_PROJECTIONS: ProjectionCatalog = {
  current(name) {
    try {
      return projectionNamed(name);
    } catch {
      // projectionNamed throws only for a name it does not know.
      return undefined;
    }
  },
  recorded(name, projectorVersion) {
    const current = BUILD_PROJECTIONS.current(name);
    return current?.version === projectorVersion ? current : undefined;
  },
};
