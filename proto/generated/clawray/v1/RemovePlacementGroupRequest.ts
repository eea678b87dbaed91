// Original file: proto/head.proto


export interface RemovePlacementGroupRequest {
  'placementGroupId'?: (string);
}

export interface RemovePlacementGroupRequest__Output {
  'placementGroupId': (string);
}
