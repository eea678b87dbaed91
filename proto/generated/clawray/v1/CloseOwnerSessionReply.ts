// Original file: proto/head.proto


export interface CloseOwnerSessionReply {
  'killedActors'?: (number);
  'removedPlacementGroups'?: (number);
}

export interface CloseOwnerSessionReply__Output {
  'killedActors': (number);
  'removedPlacementGroups': (number);
}
