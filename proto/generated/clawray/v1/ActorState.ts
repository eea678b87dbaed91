// Original file: proto/common.proto

export const ActorState = {
  ACTOR_STATE_UNSPECIFIED: 'ACTOR_STATE_UNSPECIFIED',
  PENDING_CREATION: 'PENDING_CREATION',
  ALIVE: 'ALIVE',
  RESTARTING: 'RESTARTING',
  DEAD: 'DEAD',
} as const;

export type ActorState =
  | 'ACTOR_STATE_UNSPECIFIED'
  | 0
  | 'PENDING_CREATION'
  | 1
  | 'ALIVE'
  | 2
  | 'RESTARTING'
  | 3
  | 'DEAD'
  | 4

export type ActorState__Output = typeof ActorState[keyof typeof ActorState]
